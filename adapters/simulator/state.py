"""The simulator's state and the narrow interfaces its parts use, so nothing imports the ``Simulator``:

* :class:`Cascade` (one conversation), its :class:`Gate` s, open stream :class:`Watcher` s, queued
  :class:`TurnRequest` s;
* :class:`RpcFailure` (a connect error answer);
* :class:`EngineHost` (what the scripted model needs) and :class:`ServerHost` (what the HTTP side needs),
  both implemented by :class:`.simulator.Simulator`.

Import graph: ``state`` <- ``engine``/``server``/``unary`` <- ``simulator`` (no cycle).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .faults import Faults
    from .grants import Grants
    from .profiles import Profile

RUNNING = "CASCADE_RUN_STATUS_RUNNING"
IDLE = "CASCADE_RUN_STATUS_IDLE"


class RpcFailure(Exception):
    """A connect error answer: HTTP ``status`` with body ``{"code", "message"}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class TurnCanceled(Exception):
    """CancelCascadeSteps reached a turn that was not parked on a gate."""


@dataclass
class Gate:
    index: int
    kind: str  # "permission" | "question"
    future: asyncio.Future[dict[str, Any]]


@dataclass(eq=False)
class Watcher:
    """One open StreamAgentStateUpdates: what changed since its last frame."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    dirty: set[int] = field(default_factory=set)
    status_dirty: bool = False
    closed: str | None = None  # "trailer" (server stops) | "abrupt" (restart)


@dataclass
class TurnRequest:
    text: str
    model: str
    execution_id: str
    recorded: bool = False


@dataclass
class Cascade:
    id: str
    trajectory_id: str
    created: str
    parent_id: str | None = None
    root_id: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    last_user_input: str | None = None
    last_modified: str = ""
    planner_calls: int = 0
    turns: int = 0
    queue: deque[TurnRequest] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
    gates: dict[int, Gate] = field(default_factory=dict)
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    watchers: set[Watcher] = field(default_factory=set)
    reads: int = 0  # GetCascadeTrajectorySteps answered for it (a polling reader's pace)
    last_read: float = 0.0  # time.monotonic() of the last such answer (a poller still polling)
    steps_sent: int = 0  # steps those answers held (from ``stepOffset`` on, where one was asked)

    @property
    def busy(self) -> bool:
        return self.worker is not None

    @property
    def parked(self) -> bool:
        return bool(self.gates)


def not_found() -> RpcFailure:
    return RpcFailure(500, "unknown", "trajectory not found")


class EngineHost(Protocol):
    """What :class:`.engine.Engine` uses of the simulator."""

    pace: float
    session_id: str
    gate_reasks: int
    workspace: str
    executed: list[tuple[str, str]]
    files: dict[str, str]
    grants: Grants
    faults: Faults

    def _append(self, c: Cascade, step: dict[str, Any]) -> int: ...
    def _changed(self, c: Cascade, index: int) -> None: ...
    async def _pause(self, c: Cascade, seconds: float) -> None: ...
    async def _await_gate(self, c: Cascade, index: int, kind: str) -> dict[str, Any] | None: ...
    def _new_cascade(self, parent: Cascade | None = None) -> Cascade: ...
    def _submit(self, c: Cascade, text: str, model: str) -> str: ...


class ServerHost(Protocol):
    """What :class:`.server.App` uses of the simulator."""

    profile: Profile
    faults: Faults
    calls: list[str]
    _cascades: dict[str, Cascade]

    async def _rpc(self, method: str, request: dict[str, Any]) -> dict[str, Any]: ...
    def _watch(self, c: Cascade) -> Watcher: ...
    def _unwatch(self, c: Cascade, w: Watcher) -> None: ...
    def _update_frame(self, c: Cascade, indices: list[int]) -> dict[str, Any]: ...
