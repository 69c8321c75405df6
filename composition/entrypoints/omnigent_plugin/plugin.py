"""The entry point omnigent's plugin registry loads: ``omnigent.community.harness: agy-harness``."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from omnigent.harness_plugins import HarnessContribution

HARNESS_ID = "agy-harness"
MODULE = "omnigent.community.harness.agy_harness"


def capabilities() -> Any:
    """What the plugin does, declared to omnigent (``/v1/harnesses``); None on an omnigent without the
    capability model. Each claim is tested (tests/omnigent_plugin/test_runner.py, test_chat.py)."""
    try:
        from omnigent.harness_capabilities import (
            AuthModel,
            EffortFamily,
            Elicitation,
            HarnessCapabilities,
            InstructionDelivery,
            IntegrationMode,
            ModelFamily,
            Resume,
        )
    except ImportError:
        return None
    return HarnessCapabilities(
        integration_mode=IntegrationMode.NATIVE_SERVER,  # agy's own language server, over its RPC
        elicitation=Elicitation.SSE_PERMISSION,  # agy's gates as elicitations of the turn's stream
        resume=Resume.WARM_REATTACH,  # binds the live agy conversation
        effort=EffortFamily.NONE,
        model_family=ModelFamily.MULTI,  # any model in agy's own catalog (id or display name)
        auth=AuthModel.OWN_AUTH,  # agy's sign-in
        subagents=False,  # agy's own sub-agents are shown; omnigent's are not spawned
        interrupt=True,  # Stop: agy's cancel (a parked gate denied first)
        streaming=True,  # text and reasoning deltas
        steering=True,  # a message during a turn: agy's next turn
        live_queue=True,
        images=False,  # turns are sent as text
        instruction_delivery=InstructionDelivery.NOT_DELIVERED,  # agy runs under its own rules
    )


def get_contribution() -> HarnessContribution:
    extra: dict[str, Any] = {}
    declared = capabilities()
    if declared is not None and "capabilities" in {f.name for f in fields(HarnessContribution)}:
        extra["capabilities"] = {HARNESS_ID: declared}
    return HarnessContribution(
        name="agy-harness",
        valid_harnesses=frozenset({HARNESS_ID}),
        harness_modules={HARNESS_ID: f"{MODULE}.app"},
        native_harnesses=frozenset(),
        native_agents=(),
        model_env_keys={HARNESS_ID: "HARNESS_AGY_HARNESS_MODEL"},
        spawn_env_builders={HARNESS_ID: f"{MODULE}.settings:build_spawn_env"},
        missing_install_package={HARNESS_ID: "agy-harness[omnigent]"},
        harness_labels={HARNESS_ID: "Antigravity (agy-harness)"},
        **extra,
    )
