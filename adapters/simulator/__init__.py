"""The agy simulator: a faithful loopback agy language server (and TUI) to run and test against.

    from agy_harness.adapters.simulator import Simulator, Faults
    async with Simulator(profile="1.0.10", gate_timeout=None) as sim:
        ...

See ``simulator.py`` (the API), ``scenarios.py`` (the scripted model's keywords), ``engine.py`` (a turn
at work), ``steps.py`` / ``tool_steps.py`` (recorded shapes), ``state.py`` (state and the interfaces the
parts use; no import cycle), ``unary.py`` / ``server.py`` (RPC), ``faults.py``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile
from .scenarios import SCENARIOS, plan_for

if TYPE_CHECKING:
    from .catalog import MODELS
    from .faults import Faults, MethodFailure
    from .simulator import Simulator
    from .state import IDLE, RUNNING, RpcFailure
    from .steps import stream_projection

#: The server's names, imported on first use (``agy-harness --help`` reads only the profiles).
_HOME = {
    "MODELS": "catalog",
    "Faults": "faults",
    "MethodFailure": "faults",
    "Simulator": "simulator",
    "IDLE": "state",
    "RUNNING": "state",
    "RpcFailure": "state",
    "stream_projection": "steps",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_PROFILE",
    "IDLE",
    "MODELS",
    "PROFILES",
    "RUNNING",
    "SCENARIOS",
    "Faults",
    "MethodFailure",
    "Profile",
    "RpcFailure",
    "Simulator",
    "get_profile",
    "plan_for",
    "stream_projection",
]
