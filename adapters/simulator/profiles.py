"""agy version profiles: which RPC methods a given agy version serves.

``1.0.10`` is the full surface. ``1.0.4`` predates RPC turn-send and the agent-state stream: there
``SendUserCascadeMessage`` and ``StreamAgentStateUpdates`` answer 404 (the harness must fall back to
tmux turn-send and polling).
"""

from __future__ import annotations

from dataclasses import dataclass

SERVICE = "exa.language_server_pb.LanguageServerService"

ALL_METHODS = frozenset(
    {
        "Heartbeat",
        "GetConversationMetadata",
        "GetCascadeTrajectorySteps",
        "HandleCascadeUserInteraction",
        "AcknowledgeCodeActionStep",
        "CancelCascadeSteps",
        "SendUserCascadeMessage",
        "StartCascade",
        "GetAvailableModels",
        "GetAllCascadeTrajectories",
        "SendAgentMessage",
        "StreamCascadeReactiveUpdates",
        "StreamAgentStateUpdates",
    }
)


@dataclass(frozen=True)
class Profile:
    version: str
    methods: frozenset[str]
    build: str

    def serves(self, method: str) -> bool:
        return method in self.methods

    def version_text(self) -> str:
        """What ``agy --version`` prints: the version first, then build details."""
        return f"{self.version}\nbuild: {self.build} (agy simulator)\nlanguage server: {SERVICE}\n"


PROFILES: dict[str, Profile] = {
    "1.0.10": Profile("1.0.10", ALL_METHODS, "sim-1.0.10"),
    "1.0.4": Profile(
        "1.0.4", ALL_METHODS - {"SendUserCascadeMessage", "StreamAgentStateUpdates"}, "sim-1.0.4"
    ),
}

DEFAULT_PROFILE = "1.0.10"


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown simulator profile {name!r} (known: {', '.join(PROFILES)})") from None
