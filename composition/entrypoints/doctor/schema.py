"""What the project knows of agy's shapes, for ``agy-harness doctor``'s drift report.

Steps: every key path of the recorded fixtures (the truth; ``adapters/simulator/shapes``), plus the
fields the code reads where the recordings are silent (each named below with its source). Answers:
the fields of ``GetAvailableModels``, ``GetAllCascadeTrajectories`` and the stream's update envelope
the code reads. Enums: step types and statuses, interaction kinds, trajectory types, run statuses.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from agy_harness.core.steps import TOOL_NAMES_BY_TYPE

#: Subtrees whose key names are values (a tool's own arguments, a model catalog's keys...).
FREE_FORM = ("generic.args", "metadata.toolCall.argumentsJson")

#: Step fields read by the code where the recordings are silent (source in docs/conventions.md).
EXTRA_STEP_PATHS = frozenset(
    {
        "plannerResponse.thinking",  # GENERATING planner (simulator + the reference's reader)
        "plannerResponse.error",  # the reference's _planner_error_event
        "plannerResponse.errorMessage",
        "error",
        "runCommand.shellName",  # the later stream recording
        "systemMessage",
        "systemMessage.message",
    }
)

KNOWN_STATUSES = frozenset(
    {"PENDING", "RUNNING", "WAITING", "DONE", "ERROR", "GENERATING", "CANCELED", "CANCELLED"}
)
KNOWN_INTERACTIONS = frozenset({"askQuestion", "permission"})
KNOWN_TRAJECTORY_TYPES = frozenset({"CORTEX_TRAJECTORY_TYPE_CASCADE"})
KNOWN_RUN_STATUSES = frozenset({"CASCADE_RUN_STATUS_RUNNING", "CASCADE_RUN_STATUS_IDLE"})
KNOWN_PERSIST = frozenset({"PERSIST_SUGGESTION_TYPE_SUGGESTED"})

MODEL_FIELDS = frozenset(
    {"model", "displayName", "recommended", "supportsThinking", "thinkingBudget", "label", "isRecommended"}
)
CATALOG_FIELDS = frozenset({"models", "defaultAgentModelId", "tieredModelIds"})
SUMMARY_FIELDS = frozenset(
    {
        "trajectoryType",
        "status",
        "stepCount",
        "lastUserInputTime",
        "lastModifiedTime",
        "trajectoryMetadata",
        "trajectoryMetadata.parentConversationId",
        "trajectoryMetadata.rootConversationId",
        "trajectoryMetadata.nestingDepth",
        "trajectoryMetadata.subagentSpec",
        "rootConversationId",
        "summary",  # the title (public language-server clients; see docs/conventions.md)
        "workspaces",
        "workspaces[]",
        "workspaces[].workspaceFolderAbsoluteUri",
    }
)
UPDATE_FIELDS = frozenset(
    {
        "conversationId",
        "status",
        "mainTrajectoryUpdate",
        "mainTrajectoryUpdate.stepsUpdate",
        "mainTrajectoryUpdate.stepsUpdate.indices",
        "mainTrajectoryUpdate.stepsUpdate.steps",
    }
)


def keypaths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of ``value`` (list items as ``[]``), free-form subtrees not descended."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, child in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out.add(path)
            if not path.replace("[]", "").startswith(FREE_FORM):
                out |= keypaths(child, path)
    elif isinstance(value, list):
        for child in value:
            out |= keypaths(child, f"{prefix}[]")
    return out


@cache
def _fixtures() -> tuple[dict[str, Any], ...]:
    shapes = resources.files("agy_harness.adapters.simulator").joinpath("shapes")
    out = []
    for entry in shapes.iterdir():
        if entry.name.endswith(".json"):
            value = json.loads(entry.read_text(encoding="utf-8"))
            value.pop("_fixtureProvenance", None)
            out.append(value)
    return tuple(out)


@cache
def known_step_paths() -> frozenset[str]:
    paths: set[str] = set(EXTRA_STEP_PATHS)
    for fixture in _fixtures():
        paths |= keypaths(fixture)
    return frozenset(paths)


@cache
def known_step_types() -> frozenset[str]:
    types = {str(f.get("type", "")).removeprefix("CORTEX_STEP_TYPE_") for f in _fixtures()}
    return frozenset(types | set(TOOL_NAMES_BY_TYPE) | {"SYSTEM_MESSAGE", "EPHEMERAL_MESSAGE", "GENERIC"})
