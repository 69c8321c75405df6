"""The plugin's settings (plain Python; the spawn-env path through omnigent is in test_registry)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from omnigent.community.harness.agy_harness.settings import AgySettings, SettingsError, build_spawn_env


def test_settings_from_the_environment() -> None:
    s = AgySettings.from_env(
        {
            "HARNESS_AGY_HARNESS_MODEL": " Gemini 3 Flash ",
            "HARNESS_AGY_HARNESS_PORT": "45123",
            "HARNESS_AGY_HARNESS_CASCADE": "c-1",
            "HARNESS_AGY_HARNESS_PIDS": "12, 34",
            "HARNESS_AGY_HARNESS_TMUX_PANE": "agy:0.0",
            "HARNESS_AGY_HARNESS_SIMULATOR": "true",
            "HARNESS_AGY_HARNESS_SIM_PACE": "0.5",
        }
    )
    assert s == AgySettings(
        model="Gemini 3 Flash",
        port=45123,
        cascade_id="c-1",
        pids=(12, 34),
        tmux_pane="agy:0.0",
        simulator=True,
        sim_pace=0.5,
    )
    assert AgySettings.from_env({}) == AgySettings()


@pytest.mark.parametrize(("name", "value"), [("PORT", "80a"), ("PIDS", "1,x"), ("SIM_PACE", "fast")])
def test_a_bad_setting_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=f"HARNESS_AGY_HARNESS_{name}"):
        AgySettings.from_env({f"HARNESS_AGY_HARNESS_{name}": value})


def test_spawn_env_from_a_spec() -> None:
    spec = SimpleNamespace(
        executor=SimpleNamespace(
            model="MODEL_PLACEHOLDER_M71",
            config={
                "harness": "agy-harness",
                "agy_port": 45123,
                "agy_pids": [1, 2],
                "agy_simulator": True,
                "unrelated": "x",
                "agy_cascade": "",
            },
        )
    )
    assert build_spawn_env(spec) == {
        "HARNESS_AGY_HARNESS_MODEL": "MODEL_PLACEHOLDER_M71",
        "HARNESS_AGY_HARNESS_PORT": "45123",
        "HARNESS_AGY_HARNESS_PIDS": "1,2",
        "HARNESS_AGY_HARNESS_SIMULATOR": "1",
    }
    assert build_spawn_env(SimpleNamespace()) == {}
