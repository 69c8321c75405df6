"""The simulator's cascades as the engine and the server use them (the :class:`.state.EngineHost` side
of :class:`~.simulator.Simulator`, its base): turns queued and worked, steps appended and announced to
the stream's watchers and the subscribers, the pauses a cancel cuts short, the gates that wait."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import uuid
from collections.abc import Callable
from typing import Any

from . import steps as st
from .engine import Engine
from .faults import Faults
from .grants import Grants
from .state import Cascade, Gate, TurnCanceled, TurnRequest, Watcher
from .views import update_frame

log = logging.getLogger("agy_harness.simulator")

StepCallback = Callable[[str, dict[str, Any]], None]


class CascadeHost:
    """Base of :class:`~.simulator.Simulator`: what it keeps per cascade, and how a turn runs there."""

    cascade_id: str
    home: str
    gate_timeout: float | None
    # (what the engine reads: :class:`.state.EngineHost`)
    pace: float
    session_id: str
    gate_reasks: int
    workspace: str
    executed: list[tuple[str, str]]
    files: dict[str, str]
    grants: Grants
    faults: Faults
    #: agy >= some version sends AgentStateUpdate.fullyIdle (=18) with an IDLE status; the recorded
    #: frames do not carry it, so the simulator sends it only when asked
    sends_fully_idle: bool = False
    #: IDLE but not fully idle (agy still has background work): fullyIdle is left out
    background_work: bool = False
    _cascades: dict[str, Cascade]
    _subscribers: list[StepCallback]
    _tick: asyncio.Event

    # -- internals used by the engine and the server ------------------------------------------
    def _cascade(self, cascade_id: str | None) -> Cascade:
        c = self._cascades.get(cascade_id or self.cascade_id)
        if c is None:
            raise KeyError(f"unknown cascade {cascade_id!r}")
        return c

    def _new_cascade(self, parent: Cascade | None = None) -> Cascade:
        stamp = st.now()
        c = Cascade(id=str(uuid.uuid4()), trajectory_id=str(uuid.uuid4()), created=stamp, last_modified=stamp)
        if parent is not None:
            c.parent_id = parent.id
            c.root_id = parent.root_id
        else:
            c.root_id = c.id
        self._cascades[c.id] = c
        return c

    def _submit(self, c: Cascade, text: str, model: str) -> str:
        request = TurnRequest(text, model, str(uuid.uuid4()))
        if not c.busy:
            self._record_user_input(c, request)
        c.queue.append(request)
        if c.worker is None:
            c.worker = asyncio.ensure_future(self._work(c))
            self._status_changed(c)
        self._bump()
        return request.execution_id

    def _record_user_input(self, c: Cascade, request: TurnRequest) -> None:
        where = st.Where(c.id, c.trajectory_id, len(c.steps), 0, request.execution_id)
        self._append(c, st.user_input(where, request.text, request.model, self.home))
        c.last_user_input = st.now()
        request.recorded = True

    async def _work(self, c: Cascade) -> None:
        try:
            while c.queue:
                request = c.queue.popleft()
                if not request.recorded:
                    self._record_user_input(c, request)
                first = c.turns == 0
                c.turns += 1
                c.cancel.clear()
                engine = Engine(self, c, request.text, request.model, request.execution_id, first)
                try:
                    await engine.run()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("scripted turn failed on cascade %s", c.id)
                finally:
                    c.cancel.clear()
        finally:
            c.worker = None
            for gate in c.gates.values():
                gate.future.cancel()
            c.gates.clear()
            self._status_changed(c)
            self._bump()

    def _append(self, c: Cascade, step: dict[str, Any]) -> int:
        c.steps.append(step)
        index = len(c.steps) - 1
        self._changed(c, index)
        return index

    def _changed(self, c: Cascade, index: int) -> None:
        c.last_modified = st.now()
        for w in c.watchers:
            w.dirty.add(index)
            w.event.set()
        if self._subscribers:
            snapshot = copy.deepcopy(c.steps[index])
            for callback in list(self._subscribers):
                try:
                    callback(c.id, snapshot)
                except Exception:
                    log.exception("step subscriber failed")
        self._bump()

    def _status_changed(self, c: Cascade) -> None:
        for w in c.watchers:
            w.status_dirty = True
            w.event.set()

    def _bump(self) -> None:
        self._tick.set()
        self._tick = asyncio.Event()

    def _quiet(self) -> bool:
        return all(not c.busy or (c.parked and not c.queue) for c in self._cascades.values())

    async def _pause(self, c: Cascade, seconds: float) -> None:
        if c.cancel.is_set():
            raise TurnCanceled
        if seconds <= 0:
            await asyncio.sleep(0)
        else:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await c.cancel.wait()
        if c.cancel.is_set():
            raise TurnCanceled

    async def _await_gate(self, c: Cascade, index: int, kind: str) -> dict[str, Any] | None:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        c.gates[index] = Gate(index, kind, future)
        c.cancel.clear()
        self._bump()
        try:
            if self.gate_timeout is None:
                return await asyncio.shield(future)
            async with asyncio.timeout(self.gate_timeout):
                return await asyncio.shield(future)
        except TimeoutError:
            return None
        finally:
            if c.gates.get(index) is not None and c.gates[index].future is future:
                del c.gates[index]
            c.cancel.clear()
            self._bump()

    def _watch(self, c: Cascade) -> Watcher:
        w = Watcher()
        c.watchers.add(w)
        return w

    def _unwatch(self, c: Cascade, w: Watcher) -> None:
        c.watchers.discard(w)

    def _update_frame(self, c: Cascade, indices: list[int]) -> dict[str, Any]:
        frame = update_frame(c, indices)
        if self.sends_fully_idle and not c.busy and not self.background_work:
            frame["update"]["fullyIdle"] = True  # proto-JSON: a false fullyIdle is left out
        return frame
