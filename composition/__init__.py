"""agy_harness.composition: the public API, over three layers -- :mod:`.service` (the harness and its
roles), :mod:`.root` (the container, the version gate, the session) and :mod:`.entrypoints` (the CLI,
the ACP agent, the omnigent plugin, the board).

from agy_harness.composition import open_session
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .root.container import AgyContainer, make_container
    from .root.policy import policy_of, propose_rule
    from .root.session import QueueSink, Session, open_session, session_from, to_answer
    from .root.version_gate import Capabilities
    from .service.harness import Harness, HarnessOptions, InterruptReport

#: Each public name and its module, imported on first use: the CLI imports this package for
#: ``--help``/``--version``, which must not pay for the session machinery.
_HOME = {
    "AgyContainer": "root.container",
    "Capabilities": "root.version_gate",
    "make_container": "root.container",
    "Harness": "service.harness",
    "HarnessOptions": "service.harness",
    "InterruptReport": "service.harness",
    "QueueSink": "root.session",
    "Session": "root.session",
    "open_session": "root.session",
    "session_from": "root.session",
    "to_answer": "root.session",
    "policy_of": "root.policy",  # rules that answer gates: read them (open_session(policy=...))
    "propose_rule": "root.policy",  # the narrowest rule for an approved gate ("always" never widens)
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AgyContainer",
    "Capabilities",
    "Harness",
    "HarnessOptions",
    "InterruptReport",
    "QueueSink",
    "Session",
    "make_container",
    "open_session",
    "policy_of",
    "propose_rule",
    "session_from",
    "to_answer",
]
