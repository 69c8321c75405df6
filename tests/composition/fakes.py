"""In-memory adapters for driving the harness in unit tests (the simulator covers the real wire)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer, InteractionRejected, StepBatch


class ScriptedSource:
    """Plays a script of items per opening: a list of steps (one batch), or an exception to raise.

    ``scripts`` is a list of scripts, one per ``batches()`` call; after the last one the source waits
    forever (a live, idle stream).
    """

    def __init__(self, name: str, scripts: list[list[Any]], live: bool = True) -> None:
        self.name = name
        self.live = live
        self.scripts = scripts
        self.opened = 0

    async def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        script = self.scripts[self.opened] if self.opened < len(self.scripts) else None
        self.opened += 1
        if script is None:
            await asyncio.Event().wait()
            return
        for item in script:
            if isinstance(item, BaseException):
                raise item
            if item == "wait":
                await asyncio.Event().wait()
            if item == "end":
                return
            await asyncio.sleep(0)
            yield StepBatch(cascade_id=cascade_id, steps=tuple(item), source=self.name)
        await asyncio.Event().wait()


class MemorySnapshot:
    def __init__(self, steps: list[Any] | None = None) -> None:
        self.steps = steps or []

    async def read_steps(self, cascade_id: str) -> list[Any]:
        return list(self.steps)


class RecordingSink:
    """Accepts events, optionally failing; answers gates from a queue."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.fail_next = 0  # raise on the next N deliveries
        self.accept_at_most: int | None = None  # accept only a prefix this long per call
        self.answers: asyncio.Queue[GateAnswer] = asyncio.Queue()
        self.asked: list[GateOpened] = []
        self.cancelled: list[str] = []
        self.changed = asyncio.Event()
        self._asks = PendingAsks()

    async def deliver(self, events: Sequence[Event]) -> int:
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("sink is down")
        n = len(events) if self.accept_at_most is None else min(self.accept_at_most, len(events))
        self.events.extend(events[:n])
        self.changed.set()
        return n

    async def ask(self, gate: GateOpened) -> GateAnswer:
        self.asked.append(gate)
        self.changed.set()
        try:
            return await self._asks.run(gate.gate_id, self.answers.get(), f"ask {gate.gate_id}")
        except asyncio.CancelledError:
            self.cancelled.append(gate.gate_id)  # an ask that ended withdrawn
            raise

    async def withdraw(self, gate_id: str) -> None:
        self._asks.cancel(gate_id)  # as every sink: withdraw alone ends the ask (the sink contract)

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.002)


class RecordingDelivery:
    def __init__(self, reject: list[InteractionRejected] | None = None) -> None:
        self.delivered: list[dict[str, Any]] = []
        self.reject = reject or []

    async def deliver(self, cascade_id: str, interaction: dict[str, Any]) -> None:
        if self.reject:
            raise self.reject.pop(0)
        self.delivered.append(interaction)


class RecordingEmitter:
    """Stands in for the Emitter behind a role under test: records what it was given."""

    def __init__(self) -> None:
        self.applied: list[tuple[StepBatch, str | None]] = []  # (batch, the reconciler's cascade if given)
        self.emitted: list[Event] = []
        self.notices: list[tuple[str, str, str]] = []  # (key, text, level)
        self.inflight: set[asyncio.Future[None]] = set()
        self.fail_apply = 0  # raise on the next N applies
        self.fail_emit = 0  # raise on the next N emits

    async def apply(self, batch: StepBatch, reconciler: Any = None) -> None:
        if self.fail_apply:
            self.fail_apply -= 1
            raise RuntimeError("emitter blew up")
        self.applied.append((batch, reconciler.cascade_id if reconciler is not None else None))
        await asyncio.sleep(0)

    async def emit(self, events: Sequence[Event]) -> None:
        if self.fail_emit:
            self.fail_emit -= 1
            raise RuntimeError("emitter blew up")
        self.emitted.extend(events)

    async def notice(self, key: str, text: str, level: str = "info") -> None:
        self.notices.append((key, text, level))

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.002)


class ListedDirectory:
    """A cascade directory answering a scripted listing; counts listings, can fail."""

    def __init__(self, summaries: list[Any]) -> None:
        self.summaries = summaries
        self.listings = 0
        self.fail_next = 0

    async def list_cascades(self) -> list[Any]:
        self.listings += 1
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("agy is briefly unreachable")
        return list(self.summaries)
