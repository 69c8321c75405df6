"""The emitter: committed steps in, events to the sink in order, the cursor after every ack.

:meth:`Emitter.apply` feeds a batch through a reconciler (the bound conversation's, or a sub-agent's)
and delivers what it yields; the delivery is shielded, so events of a fed step reach the sink even if
the reader is cancelled meanwhile. :meth:`Emitter.emit` retries the sink until it accepted everything,
then advances the cursor (only for the bound conversation's events), then publishes what was
delivered on the session's bus (:mod:`.bus`: the gate bridge, the directory watcher and the sub-agent
mirrors subscribe there). A step of another conversation found in a batch of ours goes to the bus too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal
from weakref import WeakKeyDictionary

from agy_harness.core.elicitation import asks_still, step_of, with_poll_details
from agy_harness.core.reconciler import Reconciler
from agy_harness.core.steps import parse_step
from agy_harness.ports.events import COMMITTED_TYPES, GATE_SET_ASIDE, Event, GateOpened, GateWithdrawn, Notice
from agy_harness.ports.protocols import (
    Cursor,
    CursorJournal,
    CursorStore,
    EventSink,
    SessionClock,
    StepBatch,
    StepSnapshot,
    StepSnapshotFrom,
)

from . import eager
from .bus import SessionBus
from .clock import LoopClock
from .conversation import Conversation, HarnessOptions, HarnessStats
from .journal_state import journal_state

#: What a sink raises when it cannot take an event for its content (not because it is down):
#: encoding, value and type errors (pydantic's serialization and validation errors are ValueErrors).
CONTENT_ERRORS = (ValueError, TypeError, UnicodeError, RecursionError)

log = logging.getLogger("agy_harness.harness")

_CURSOR_TYPES = COMMITTED_TYPES | {"text_delta", "reasoning_delta"}

Level = Literal["info", "warning", "error"]

#: how long a read for a question gate's details serves the next question gates (a flood of them)
DETAILS_FRESH = 2.0
DETAILS_KEPT = 256  # WAITING steps of one such read kept for them


class Emitter:
    def __init__(
        self,
        conversation: Conversation,
        *,
        snapshot: StepSnapshot,
        sink: EventSink,
        cursor_store: CursorStore | None = None,
        options: HarnessOptions | None = None,
        stats: HarnessStats | None = None,
        bus: SessionBus | None = None,
        clock: SessionClock | None = None,
    ) -> None:
        self.conversation = conversation
        self.snapshot = snapshot
        self.sink = sink
        #: the sink's deliver never waits (EventSink's ``delivers_at_once``): see _deliver_shielded
        self._at_once = getattr(sink, "delivers_at_once", False) is True
        self.cursor_store = cursor_store
        self.options = options or HarnessOptions()
        self.stats = stats or HarnessStats()
        self.bus = bus if bus is not None else SessionBus()
        self.clock = clock if clock is not None else LoopClock()
        #: a look at each gate before the sink sees it (the gate watch: a scope agy did not keep is
        #: not offered, and a notice says so): the events that stand for it
        self.before_gate: Callable[[GateOpened], list[Event]] | None = None
        #: who decided a withdrawn gate, added before the sink sees it (the gate bridge's recorder)
        self.withdrawn_by: Callable[[GateWithdrawn], Awaitable[GateWithdrawn]] | None = None
        self.inflight: set[asyncio.Future[None]] = set()
        self._stopped: set[asyncio.Future[None]] = set()  # deliveries whose reader was cancelled
        self._eager = False  # a delivery runs in the reader's task (_deliver_shielded)
        self._lock = asyncio.Lock()
        #: one batch of a conversation fed at a time (see apply), a lock per reconciler
        self._feeding: WeakKeyDictionary[Reconciler, asyncio.Lock] = WeakKeyDictionary()
        # a journal store takes only what changed (O(1) per delivery); see _record
        self._journal = cursor_store if isinstance(cursor_store, CursorJournal) else None
        self._journaled: Reconciler | None = None  # the reconciler whose committed keys it has
        self._in_batch = False
        self._sync_due: set[str] = set()  # cascades whose journal records await their fsync
        #: WAITING steps of the last read for a question gate's details, by (cascade, trajectory, index)
        self._details: dict[tuple[str, str, int], Any] = {}
        self._details_at = 0.0

    async def apply(self, batch: StepBatch, reconciler: Reconciler | None = None) -> None:
        if reconciler is None and self.bus.takes_foreign_steps:
            # a step of another conversation on ours (agy >= 1.1.1 relays sub-agents' updates on the
            # root's stream): it is that conversation's, never ours
            ours, kept = self.conversation.cascade_id, []
            for raw in batch.steps:
                other = _other_cascade(raw, ours)
                if other:
                    await self.bus.foreign_step(other, raw)
                else:
                    kept.append(raw)
            if len(kept) != len(batch.steps):
                batch = StepBatch(
                    cascade_id=batch.cascade_id,
                    steps=tuple(kept),
                    snapshot=batch.snapshot,
                    source=batch.source,
                )
        reconciler = reconciler or self.conversation.reconciler
        self.stats.batches[batch.source or "?"] = self.stats.batches.get(batch.source or "?", 0) + 1
        # Two sources read one conversation (the stream, the run-status backstop's read, a sub-agent's
        # stream and its final read): one batch is fed and delivered at a time. A step is committed
        # when fed and its delivery queued after; another source's batch fed meanwhile would hand
        # the next step to the sink first.
        feeding = self._feeding.get(reconciler)
        if feeding is None:
            feeding = self._feeding[reconciler] = asyncio.Lock()
        async with feeding:
            await self._feed(batch, reconciler)
        await self._sync()

    async def _feed(self, batch: StepBatch, reconciler: Reconciler) -> None:
        self._in_batch = True  # one journal fsync per batch, at its end
        try:
            steps = batch.steps
            for i, raw in enumerate(steps):
                events = reconciler.feed(raw)
                if events:
                    # fed steps are committed: their events must reach the sink even if the reader is
                    # cancelled. One delivery goes on with the rest of the batch (an attach is
                    # thousands of steps: not a task and a shield each); see _deliver_shielded.
                    await self._deliver_shielded(self._deliver_rest(events, steps[i + 1 :], reconciler))
                    break
        finally:
            self._in_batch = False

    async def _deliver_shielded(self, delivery: Coroutine[Any, Any, None]) -> None:
        """Run ``delivery`` to its end even if the caller is cancelled meanwhile: in a task the caller
        awaits shielded; if the caller is cancelled, the task is marked stopped (the step it delivers
        still reaches the sink, no further step of the batch is fed).

        To a sink that says it ``delivers_at_once`` (its deliver never waits: QueueSink), the delivery
        runs here at once (:mod:`.eager`): no cancellation can land before it is done, and a task is
        made only if it has to wait after all: on the lock it goes on in the task where it waits (no
        timeout is bound to a lock's wait); before a gate's details, a cursor write or a retry it
        hands off to the task first (_handoff). A task and a shield per streamed frame were
        a good part of the loop's CPU and garbage at 300 streaming sessions (issue #22)."""
        if self._at_once:
            self._eager = True
            try:
                task = eager.start(delivery)
            finally:
                self._eager = False
            if task is None:
                return
        else:
            task = asyncio.ensure_future(delivery)
        self.inflight.add(task)
        task.add_done_callback(self._settled)
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            self._stopped.add(task)  # the step being delivered still is; the rest is read again later
            raise

    async def _handoff(self) -> None:
        """Before a wait that may be bound to the task it begins in (a timeout: an RPC call's, a
        sink's): a delivery still running in the reader's task (_deliver_shielded) goes on in its own."""
        if self._eager:
            await asyncio.sleep(0)

    def _settled(self, task: asyncio.Future[None]) -> None:
        self.inflight.discard(task)
        self._stopped.discard(task)

    async def _deliver_rest(self, events: list[Event], rest: Sequence[Any], reconciler: Reconciler) -> None:
        """Deliver a fed step's events; then feed and deliver the rest of its batch step by step (one
        delivery per step, as sinks expect), until the delivery is stopped: no step is fed after its
        reader is gone."""
        await self.emit(events)
        for raw in rest:
            if self._stopped and asyncio.current_task() in self._stopped:
                return
            events = reconciler.feed(raw)
            if events:
                await self.emit(events)

    async def _with_details(self, events: Sequence[Event]) -> list[Event]:
        """Question gates seen on the stream lack the multi-select flags: read them from a poll."""
        out = list(events)
        for i, event in enumerate(out):
            if isinstance(event, GateOpened) and event.kind == "question":
                await self._handoff()
                try:
                    out[i] = with_poll_details(event, await self._details_of(event))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("gate %s: could not read its details (%s)", event.gate_id, exc)
        if self.before_gate is not None and any(isinstance(e, GateOpened) for e in out):
            look = self.before_gate
            out = [x for e in out for x in (look(e) if isinstance(e, GateOpened) else [e])]
        if self.withdrawn_by is not None:
            tell = self.withdrawn_by
            out = [await tell(e) if isinstance(e, GateWithdrawn) else e for e in out]
        return out

    async def _details_of(self, gate: GateOpened) -> list[Any]:
        """The poll's copy of ``gate``'s step (one step, in a list), for its details. agy is read from
        the gate's step on (``stepOffset``: not the whole conversation, issue #35 case 8) and what that
        read holds serves the next question gates too, each once, while it is fresh
        (:data:`DETAILS_FRESH`) and shows that very request WAITING: a flood of N question gates costs
        one read in front of the next event, not N whole reads under the lock every event waits on."""
        key = (gate.cascade_id, gate.trajectory_id, gate.step_index)
        kept = self._details.pop(key, None)
        fresh = self.clock.monotonic() - self._details_at <= DETAILS_FRESH
        if kept is not None and fresh and asks_still(gate, parse_step(kept)):
            return [kept]
        snapshot = self.snapshot
        raws: list[Any] = []
        if isinstance(snapshot, StepSnapshotFrom):
            raws = await snapshot.read_steps_from(gate.cascade_id, gate.step_index)
        if step_of(gate, raws) is None:  # not there (another trajectory's index): the whole conversation
            raws = await snapshot.read_steps(gate.cascade_id)
        self._details_at = self.clock.monotonic()
        self._details = {}
        for raw in raws:
            step = parse_step(raw)
            if step is not None and step.status == "WAITING" and len(self._details) < DETAILS_KEPT:
                self._details[(gate.cascade_id, step.key.trajectory_id, step.key.step_index)] = raw
        return raws

    async def set_aside(self, gate: GateOpened) -> None:
        """``gate`` is set aside (agy refuses any answer to it while it still shows it WAITING: bogus
        or malformed): its card leaves every surface, by a withdrawal of reason GATE_SET_ASIDE, so a
        flood of them never stands in front of a real request and none is answered twice. The sink
        alone is told (not the bus: for the session's roles the step still waits, as agy shows it)."""
        tag = gate.gate_id.rsplit("/", 1)[-1]
        event = GateWithdrawn(
            id=f"{gate.step_key}/gate/{tag}/set-aside",
            cascade_id=gate.cascade_id,
            step_key=gate.step_key,
            gate_id=gate.gate_id,
            reason=GATE_SET_ASIDE,
        )
        await self.emit([event], publish=False)

    async def emit(self, events: Sequence[Event], *, publish: bool = True) -> None:
        """Deliver in order until the sink accepted all; then advance the cursor; then tell the bus
        (unless not ``publish``)."""
        async with self._lock:  # the details read too: a concurrent emit must not overtake a gate
            events = await self._with_details(events) if publish else list(events)
            pending = list(events)
            pause = self.options.sink_retry
            while pending:
                if not self._at_once:
                    await self._handoff()
                try:
                    accepted = await self.sink.deliver(pending)
                except asyncio.CancelledError:
                    raise
                except CONTENT_ERRORS as exc:  # maybe one event the sink cannot take: find it
                    accepted = await self._isolate(pending, exc)
                except Exception as exc:
                    log.warning(
                        "event sink failed (%s: %s); retrying in %.1fs", type(exc).__name__, exc, pause
                    )
                    accepted = 0
                accepted = max(0, min(accepted, len(pending)))
                self.stats.events += accepted
                pending = pending[accepted:]
                if pending:
                    await self._handoff()
                    await self.clock.sleep(pause)
                    pause = min(pause * 2, self.options.max_backoff)
            # after every acknowledged delivery (deltas too: a restart resumes a reply where the
            # consumer's copy ends, so no delta is re-cut under an id it already has)
            reconciler = self.conversation.reconciler
            mine = bool(events) and events[0].cascade_id == reconciler.cascade_id  # a sub-agent's are not
            if self.cursor_store is not None and mine and any(e.type in _CURSOR_TYPES for e in events):
                if self._journal is not None:
                    self._record(self._journal, reconciler)  # one append, on the loop: no task, no await
                    if not self._in_batch:
                        await self._handoff()
                        await self._sync()
                else:
                    await self._handoff()
                    await self._save_cursor(reconciler)
        if publish:
            self.bus.delivered(events)

    async def _isolate(self, pending: list[Event], exc: Exception) -> int:
        """The sink refused a delivery for its content (an encoding or value error): deliver the first
        event alone. If the sink refuses it again for its content, it is quarantined -- replaced in
        ``pending`` by a notice naming it, so one event never wedges the sink (the rest, and the
        cursor, move on). Returns how many events the sink accepted (0 when it is simply down)."""
        first = pending[0]
        await self._handoff()
        try:
            return min(1, await self.sink.deliver([first]))
        except asyncio.CancelledError:
            raise
        except CONTENT_ERRORS as again:
            self.stats.quarantined.append(first.id)
            log.error(
                "event sink refuses %s for its content (%s: %s); quarantined",
                first.id,
                type(again).__name__,
                again,
            )
            pending[0] = Notice(
                id=f"{first.id}/quarantined",
                cascade_id=first.cascade_id,
                step_key=first.step_key,
                level="error",
                text=f"event {first.id} ({first.type}) was refused by the event sink for its content "
                f"({type(again).__name__}) and left out",
            )
            if first.id.endswith("/quarantined"):  # not even its notice: drop it
                pending.pop(0)
            return 0
        except Exception as down:
            log.warning("event sink failed (%s: %s after %s); retrying", type(down).__name__, down, exc)
            return 0

    async def _save_cursor(self, reconciler: Reconciler) -> None:
        """A plain CursorStore: the whole cursor, off the loop."""
        assert self.cursor_store is not None
        st = reconciler.state
        cursor = Cursor(
            cascade_id=reconciler.cascade_id,
            committed=sorted(st.committed),
            state=st.model_dump(mode="json"),
        )
        await asyncio.to_thread(self.cursor_store.save, cursor)  # file I/O off the loop

    def _record(self, journal: CursorJournal, reconciler: Reconciler) -> None:
        """A journal: what changed since its last record, appended at once (the fsync is _sync's)."""
        if reconciler is not self._journaled:  # bound, resumed or rotated: everything it has, once
            self._journaled = reconciler
            added = list(reconciler.state.committed)
        else:
            added = reconciler.committed_log or []
        reconciler.committed_log = []  # from now on the reconciler keeps what the journal lacks
        if journal.record(reconciler.cascade_id, added, journal_state(reconciler.state)):
            self._sync_due.add(reconciler.cascade_id)

    async def _sync(self) -> None:
        """Make the journal durable (the durability rule in adapters/store/cursor_file.py)."""
        due, self._sync_due = self._sync_due, set()
        if self._journal is not None:
            for cascade_id in due:
                await asyncio.to_thread(self._journal.sync, cascade_id)

    async def notice(self, key: str, text: str, level: Level = "info") -> None:
        await self.emit(
            [
                Notice(
                    id=f"{key}/notice",
                    cascade_id=self.conversation.cascade_id,
                    level=level,
                    text=text,
                )
            ]
        )


def _other_cascade(raw: Any, ours: str) -> str:
    """The conversation a raw step names, when it is not ``ours`` ("" otherwise)."""
    if not isinstance(raw, dict):
        return ""
    metadata = raw.get("metadata")
    info = metadata.get("sourceTrajectoryStepInfo") if isinstance(metadata, dict) else None
    cascade = info.get("cascadeId") if isinstance(info, dict) else None
    return cascade if isinstance(cascade, str) and cascade and cascade != ours else ""
