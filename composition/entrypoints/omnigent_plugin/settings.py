"""How the plugin finds agy: environment variables, set by omnigent's spawn-env builder from the agent spec.

omnigent spawns one harness process per conversation and passes it an environment. Our spawn-env
builder (:func:`build_spawn_env`, registered in the contribution) turns the agent spec into these
variables; they may also be set by hand in the environment omnigent runs in:

=================================  =======================================  ==============================
variable                           agent spec (``executor:``)               meaning
=================================  =======================================  ==============================
``HARNESS_AGY_HARNESS_MODEL``      ``model:``                               agy model id or label
``HARNESS_AGY_HARNESS_PORT``       ``config: {agy_port: N}``                agy's language-server port
``HARNESS_AGY_HARNESS_BASE_URL``   ``config: {agy_base_url: URL}``          instead of the port
``HARNESS_AGY_HARNESS_CASCADE``    ``config: {agy_cascade: ID}``            the conversation to bind
``HARNESS_AGY_HARNESS_TMUX_PANE``  ``config: {agy_tmux_pane: TARGET}``      tmux turn-send fallback
``HARNESS_AGY_HARNESS_PIDS``       ``config: {agy_pids: [..]}``             narrow discovery to these pids
``HARNESS_AGY_HARNESS_SIMULATOR``  ``config: {agy_simulator: true}``        run the built-in simulator
``HARNESS_AGY_HARNESS_SIM_PACE``   ``config: {agy_sim_pace: 0.05}``         its pacing (1 = human)
=================================  =======================================  ==============================

Without a port or base URL the plugin discovers agy (scans agy processes for a loopback port that
knows the cascade; refuses ambiguity). Without a cascade it binds agy's most recent conversation.
omnigent's per-session ``/model`` override replaces ``HARNESS_AGY_HARNESS_MODEL``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "HARNESS_AGY_HARNESS_"
MODEL_ENV = PREFIX + "MODEL"

# spec ``executor.config`` key -> variable suffix
_CONFIG_KEYS = {
    "agy_port": "PORT",
    "agy_base_url": "BASE_URL",
    "agy_cascade": "CASCADE",
    "agy_tmux_pane": "TMUX_PANE",
    "agy_pids": "PIDS",
    "agy_simulator": "SIMULATOR",
    "agy_sim_pace": "SIM_PACE",
}


class SettingsError(ValueError):
    """A setting cannot be read; the message names the variable."""


@dataclass(frozen=True)
class AgySettings:
    model: str | None = None
    port: int | None = None
    base_url: str | None = None
    cascade_id: str | None = None
    tmux_pane: str | None = None
    pids: tuple[int, ...] | None = None
    simulator: bool = False
    sim_pace: float = 0.05

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgySettings:
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(PREFIX + name, "").strip()
            return value or None

        def as_int(name: str, text: str) -> int:
            try:
                return int(text)
            except ValueError:
                raise SettingsError(f"{PREFIX}{name}={text!r} is not a whole number") from None

        port = get("PORT")
        pids = get("PIDS")
        pace = get("SIM_PACE")
        try:
            sim_pace = float(pace) if pace is not None else 0.05
        except ValueError:
            raise SettingsError(f"{PREFIX}SIM_PACE={pace!r} is not a number") from None
        return cls(
            model=get("MODEL"),
            port=as_int("PORT", port) if port is not None else None,
            base_url=get("BASE_URL"),
            cascade_id=get("CASCADE"),
            tmux_pane=get("TMUX_PANE"),
            pids=tuple(as_int("PIDS", p.strip()) for p in pids.split(",") if p.strip()) if pids else None,
            simulator=(get("SIMULATOR") or "").lower() in ("1", "true", "yes", "on"),
            sim_pace=sim_pace,
        )


def _env_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def build_spawn_env(spec: object, *, cwd: Path | None = None, workdir: Path | None = None) -> dict[str, str]:
    """omnigent's spawn-env builder: the agent spec's model and ``agy_*`` config keys as variables.

    omnigent replaces ``HARNESS_AGY_HARNESS_MODEL`` with a session's ``/model`` override after this.
    """
    del cwd, workdir  # agy has its own workspace; nothing here depends on omnigent's
    env: dict[str, str] = {}
    executor = getattr(spec, "executor", None)
    model = getattr(executor, "model", None)
    if isinstance(model, str) and model.strip():
        env[MODEL_ENV] = model.strip()
    config = getattr(executor, "config", None)
    if isinstance(config, Mapping):
        for key, suffix in _CONFIG_KEYS.items():
            value = config.get(key)
            if value is not None and value != "":
                env[PREFIX + suffix] = _env_value(value)
    return env
