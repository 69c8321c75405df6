"""The entry point omnigent's plugin registry loads: ``omnigent.community.harness: agy-harness``."""

from __future__ import annotations

from omnigent.harness_plugins import HarnessContribution

HARNESS_ID = "agy-harness"
MODULE = "omnigent.community.harness.agy_harness"


def get_contribution() -> HarnessContribution:
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
    )
