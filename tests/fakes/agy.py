"""The one home of the tests' fakes: in-memory stand-ins for every port (the simulator covers the real
wire). Each fake of a port is held to that port's contract suite (tests/contracts/), like its adapters.

StepSource: ScriptedSource · StepSnapshot: MemorySnapshot · InteractionDelivery: RecordingDelivery ·
TurnSender: RecordingSender · Interrupter: RecordingInterrupter · CascadeDirectory: ListedDirectory ·
CascadeStarter: NewCascades · ModelCatalog: FixedCatalog · TuiKeys / TuiScreen: ScriptedPane ·
EventSink: RecordingSink · Clock / SessionClock: FakeClock (virtual time) · Claims: MemoryClaims ·
CursorStore: the adapters' MemoryCursorStore (with ObservedCursorStore to watch its saves).
RecordingEmitter stands in for the emitter behind a role (with the session bus the roles subscribe to).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import re
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.adapters.store.memory import MemoryCursorStore
from agy_harness.composition.service.bus import SessionBus
from agy_harness.ports.errors import UnsafeState
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import (
    CascadeSummary,
    Cursor,
    GateAnswer,
    InteractionRejected,
    ModelInfo,
    StepBatch,
)


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
    """Answers ``read_steps`` with ``steps`` (a copy); the next ``fail_next`` reads, or every read
    while ``down`` is set, raise ConnectionError (agy unreachable)."""

    def __init__(self, steps: list[Any] | None = None, *, fail_next: int = 0, down: bool = False) -> None:
        self.steps = steps or []
        self.fail_next = fail_next
        self.down = down
        self.reads = 0

    async def read_steps(self, cascade_id: str) -> list[Any]:
        self.reads += 1
        if self.down or self.fail_next:
            self.fail_next = max(0, self.fail_next - 1)
            raise ConnectionError("agy is unreachable")
        return list(self.steps)


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

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.002)


class RecordingDelivery:
    """Records the interactions it takes; refuses with the queued ``reject`` errors first, and with
    ``down`` errors (transport failures) before those. ``on_deliver`` sees each call first (a test
    changes agy's steps as the answer arrives)."""

    def __init__(
        self,
        reject: list[InteractionRejected] | None = None,
        *,
        down: int = 0,
        on_deliver: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.delivered: list[dict[str, Any]] = []
        self.reject = reject or []
        self.down = down
        self.attempts = 0
        self.on_deliver = on_deliver

    async def deliver(self, cascade_id: str, interaction: dict[str, Any]) -> None:
        self.attempts += 1
        if self.on_deliver is not None:
            self.on_deliver(cascade_id, interaction)
        if self.down:
            self.down -= 1
            raise ConnectionError("agy is unreachable")
        if self.reject:
            raise self.reject.pop(0)
        self.delivered.append(interaction)


class RecordingSender:
    """A TurnSender: records (cascade, text), or raises ``fail``; ``log`` gets a line per turn."""

    def __init__(
        self, name: str = "fake", fail: Exception | None = None, log: list[str] | None = None
    ) -> None:
        self.name, self.fail, self.log = name, fail, log
        self.sent: list[tuple[str, str]] = []

    async def send(self, cascade_id: str, text: str) -> None:
        if self.fail is not None:
            raise self.fail
        self.sent.append((cascade_id, text))
        if self.log is not None:
            self.log.append(f"send {cascade_id}")

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.sent]


class RecordingInterrupter:
    """An Interrupter: counts its calls; ``log`` gets a line per call."""

    def __init__(self, log: list[str] | None = None) -> None:
        self.log = log
        self.interrupted: list[str] = []

    @property
    def calls(self) -> int:
        return len(self.interrupted)

    async def interrupt(self, cascade_id: str) -> None:
        self.interrupted.append(cascade_id)
        if self.log is not None:
            self.log.append(f"interrupt {cascade_id}")


class FixedCatalog:
    """A ModelCatalog answering ``models`` (or raising it, an exception); counts its calls."""

    def __init__(self, models: list[ModelInfo] | Exception) -> None:
        self._models = models
        self.calls = 0

    async def models(self) -> list[ModelInfo]:
        self.calls += 1
        if isinstance(self._models, Exception):
            raise self._models
        return list(self._models)


class ScriptedPane:
    """agy's pane (TuiKeys and TuiScreen): shows ``rows``; ``prompt_for`` names the gate whose prompt it
    shows (None: none); records the keys typed."""

    def __init__(self, rows: list[str] | None = None, prompt_for: str | None = None) -> None:
        self.rows = rows or []
        self.prompt_for = prompt_for
        self.typed: list[list[str]] = []

    async def shows_prompt(self, gate: GateOpened) -> bool:
        return gate.gate_id == self.prompt_for

    async def send_keys(self, keys: Sequence[str]) -> None:
        bad = [k for k in keys if not re.fullmatch(r"[0-9]{1,3}|Enter|Escape", k)]
        if bad:  # as agy's real pane: nothing but digits, Enter and Escape is ever typed
            raise ValueError(f"refusing to type {bad!r} into agy's pane (only digits, Enter, Escape)")
        self.typed.append(list(keys))
        if keys and keys[-1] in ("Enter", "Escape"):
            self.prompt_for = None  # the prompt took them

    async def screen(self) -> list[str]:
        return list(self.rows)


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

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.002)


class ListedDirectory:
    """A cascade directory answering a scripted listing; counts listings, can fail."""

    def __init__(self, summaries: list[CascadeSummary]) -> None:
        self.summaries = summaries
        self.listings = 0
        self.fail_next = 0

    async def list_cascades(self) -> list[CascadeSummary]:
        self.listings += 1
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("agy is briefly unreachable")
        return list(self.summaries)


class NewCascades:
    """A CascadeStarter that mints a conversation id per start and lists each new conversation, idle,
    in ``directory`` (as agy's own directory then lists it)."""

    def __init__(self, directory: ListedDirectory | None = None) -> None:
        self.directory = directory
        self.started: list[str] = []

    async def start(self) -> str:
        cascade_id = str(uuid.uuid4())
        self.started.append(cascade_id)
        if self.directory is not None:
            self.directory.summaries.append(
                CascadeSummary(cascade_id=cascade_id, status="CASCADE_RUN_STATUS_IDLE")
            )
        return cascade_id
