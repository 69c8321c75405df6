"""The tests' fakes of what a session keeps and shows: its sink, clock, claims, cursor store, and the
emitter behind a role (see :mod:`tests.fakes`)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.adapters.store.memory import MemoryCursorStore
from agy_harness.composition.service.bus import SessionBus
from agy_harness.ports.errors import UnsafeState
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import Cursor, GateAnswer, StepBatch


class RecordingSink:
    """Accepts events, optionally failing; answers gates from a queue. ``max_concurrent_asks``: how
    many asks it shows at once, when given (the bridge's default otherwise)."""

    def __init__(self, *, accept_at_most: int | None = None, max_concurrent_asks: int | None = None) -> None:
        self.events: list[Event] = []
        self.fail_next = 0  # raise on the next N deliveries
        self.accept_at_most = accept_at_most  # accept only a prefix this long per call
        if max_concurrent_asks is not None:
            self.max_concurrent_asks = max_concurrent_asks
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

    async def wait_for(self, predicate: Any, timeout: float = 60.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.002)


class FakeClock:
    """Virtual time (the SessionClock port): nothing in a unit test really sleeps.

    Sleeps and timed waits are timers on a virtual clock. Once the loop has run what is ready (a few
    turns), the earliest timer fires and time jumps to it; a wait whose event is set by then ends
    without time passing (as on the loop's clock).
    ``waited`` records every sleep and timed wait asked for; while ``held`` is an unset event, sleeps
    wait for it (a test acts in the middle of a backoff). A test waiting for virtual progress should
    poll with ``asyncio.sleep(0)``, not a real sleep, so that it sees each step as it happens.
    """

    TURNS = 5

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.waited: list[float] = []
        self.held: asyncio.Event | None = None
        #: (deadline, order, what fires, the event a wait ends on)
        self._timers: list[tuple[float, int, asyncio.Future[None], asyncio.Event | None]] = []
        self._seq = itertools.count()
        self._driver: asyncio.Task[None] | None = None

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waited.append(seconds)
        if self.held is not None:
            await self.held.wait()
        await self._timer(seconds)

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        self.waited.append(timeout)
        if event.is_set():
            return True
        timer = asyncio.ensure_future(self._timer(timeout, event))
        setter = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({timer, setter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            setter.cancel()
        return event.is_set()

    async def _timer(self, seconds: float, until: asyncio.Event | None = None) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self.now + max(0.0, seconds), next(self._seq), future, until))
        if self._driver is None or self._driver.done():
            self._driver = asyncio.ensure_future(self._drive())
        await future

    async def _drive(self) -> None:
        while True:
            for _ in range(self.TURNS):
                await asyncio.sleep(0)
            while self._timers and self._timers[0][2].done():  # cancelled meanwhile
                heapq.heappop(self._timers)
            if not self._timers:
                return
            woken = [t for t in self._timers if t[3] is not None and t[3].is_set() and not t[2].done()]
            for _, _, future, _ in woken:  # their event came first: they end now, no time passes
                future.set_result(None)
            if woken:
                continue
            deadline, _, future, _ = heapq.heappop(self._timers)
            self.now = max(self.now, deadline)
            future.set_result(None)


class MemoryClaims:
    """The Claims port in memory: what the sessions of one ``world`` (a shared dict) claimed; no file
    is written. ``unsafe`` makes ``others()`` refuse, as an unsafe claims directory does."""

    def __init__(self, world: dict[str, str] | None = None, *, unsafe: str = "") -> None:
        self.world = world if world is not None else {}
        self.token = uuid.uuid4().hex
        self.unsafe = unsafe
        self.reads = 0

    def claim(self, cascade_id: str) -> None:
        self.world.setdefault(cascade_id, self.token)

    def others(self) -> set[str]:
        self.reads += 1
        if self.unsafe:
            raise UnsafeState(self.unsafe)
        return {cascade for cascade, token in self.world.items() if token != self.token}


class ObservedCursorStore(MemoryCursorStore):
    """A MemoryCursorStore that calls ``on_save`` before each save (and counts them)."""

    def __init__(self, on_save: Callable[[Cursor], None] | None = None) -> None:
        super().__init__()
        self.on_save = on_save

    def save(self, cursor: Cursor) -> None:
        if self.on_save is not None:
            self.on_save(cursor)
        super().save(cursor)


class RecordingEmitter:
    """Stands in for the Emitter behind a role under test: records what it was given (``feeds``: a
    batch applied with a reconciler is fed to it, its events recorded as emitted)."""

    def __init__(self, *, feeds: bool = False) -> None:
        self.feeds = feeds
        self.applied: list[tuple[StepBatch, str | None]] = []  # (batch, the reconciler's cascade if given)
        self.emitted: list[Event] = []
        self.notices: list[tuple[str, str, str]] = []  # (key, text, level)
        self.inflight: set[asyncio.Future[None]] = set()
        self.fail_apply = 0  # raise on the next N applies
        self.fail_emit = 0  # raise on the next N emits
        self.bus = SessionBus()  # what the roles under test subscribe to

    async def apply(self, batch: StepBatch, reconciler: Any = None) -> None:
        if self.fail_apply:
            self.fail_apply -= 1
            raise RuntimeError("emitter blew up")
        self.applied.append((batch, reconciler.cascade_id if reconciler is not None else None))
        if self.feeds and reconciler is not None:
            for raw in batch.steps:
                self.emitted.extend(reconciler.feed(raw))
        await asyncio.sleep(0)

    async def emit(self, events: Sequence[Event]) -> None:
        if self.fail_emit:
            self.fail_emit -= 1
            raise RuntimeError("emitter blew up")
        self.emitted.extend(events)

    async def notice(self, key: str, text: str, level: str = "info") -> None:
        self.notices.append((key, text, level))

    async def wait_for(self, predicate: Any, timeout: float = 60.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.002)
