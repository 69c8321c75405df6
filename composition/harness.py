"""The harness for one agy conversation: the read driver, the gate bridge, turns and interrupt.

Built only on ports, so every adapter (RPC stream, RPC poll, transcript tail; RPC or tmux turn-send;
any event sink) plugs in. :func:`agy_harness.composition.session.open_session` builds one from a
running agy (or the simulator) through the version gate.

Read driver: the sources are tried in preference order (stream, then poll, then tail). A source that
fails is left for the next one for a backoff period, then the preferred one is tried again; one that
says it cannot serve this agy at all (:class:`SourceUnavailable`, an HTTP 404) is dropped with one log
line. Every step goes through the reconciler, which dedups the stream's replay after a reconnect and
a poll after a stream. Events reach the sink in order; the cursor advances only past what the sink
acknowledged. Nothing unexpected kills the driver: it logs, counts and restarts with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from agy_harness.core.elicitation import (
    classify_rejection,
    delivery_target,
    interaction_payload,
    with_poll_details,
)
from agy_harness.core.reconciler import MapperState, Reconciler
from agy_harness.core.rotation import is_child, rotated_state, rotation_target
from agy_harness.ports.events import (
    COMMITTED_TYPES,
    Event,
    GateOpened,
    GateWithdrawn,
    Notice,
    Rotation,
    SubagentStarted,
    ToolResult,
)
from agy_harness.ports.protocols import (
    CascadeDirectory,
    Cursor,
    CursorStore,
    EventSink,
    GateAnswer,
    InteractionDelivery,
    InteractionRejected,
    Interrupter,
    SourceUnavailable,
    StepBatch,
    StepSnapshot,
    StepSource,
    TurnSender,
)

log = logging.getLogger("agy_harness.harness")

_CURSOR_TYPES = COMMITTED_TYPES | {"text_delta", "reasoning_delta"}


@dataclass
class HarnessOptions:
    fallback_backoff: float = 0.5  # first stay on the fallback source before retrying the preferred one
    max_backoff: float = 10.0
    sink_retry: float = 0.2  # first pause before re-delivering what the sink did not accept
    directory_interval: float = 1.0  # rotation + run-status backstop check; 0 disables
    idle_reports_to_close: int = 2
    max_delivery_attempts: int = 3
    subagent_poll: float = 0.25  # a sub-agent's cascade is polled at this interval


@dataclass
class HarnessStats:
    source_errors: int = 0
    driver_restarts: int = 0
    demotions: list[str] = field(default_factory=list)
    batches: dict[str, int] = field(default_factory=dict)
    events: int = 0
    current_source: str = ""


@dataclass(frozen=True)
class InterruptReport:
    cancelled: bool
    denied_gates: tuple[str, ...] = ()
    detail: str = ""


class Harness:
    def __init__(
        self,
        *,
        cascade_id: str,
        sources: Sequence[StepSource],
        snapshot: StepSnapshot,
        sink: EventSink,
        delivery: InteractionDelivery | None = None,
        turn_senders: Sequence[TurnSender] = (),
        interrupter: Interrupter | None = None,
        directory: CascadeDirectory | None = None,
        cursor_store: CursorStore | None = None,
        options: HarnessOptions | None = None,
    ) -> None:
        if not sources:
            raise ValueError("a harness needs at least one step source")
        self.sources = list(sources)
        self.snapshot = snapshot
        self.sink = sink
        self.delivery = delivery
        self.turn_senders = list(turn_senders)
        self.interrupter = interrupter
        self.directory = directory
        self.cursor_store = cursor_store
        self.options = options or HarnessOptions()
        self.stats = HarnessStats()
        self.cascade_id = cascade_id
        self.reconciler = self._reconciler_for(cascade_id, None)
        self._emit_lock = asyncio.Lock()
        self._gates: asyncio.Queue[GateOpened] = asyncio.Queue()
        self._queued: dict[str, GateOpened] = {}
        self._current_gate: GateOpened | None = None
        self._current_ask: asyncio.Task[GateAnswer] | None = None
        self._delivered_gates: set[str] = set()
        self._reader: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._idle_reports = 0
        self._inflight: set[asyncio.Future[None]] = set()
        self._children: dict[str, asyncio.Task[None]] = {}
        self._known: set[str] | None = None  # cascades listed at bind time (see rotation_target)
        self._subagent_results: list[tuple[str, str]] = []  # (call_id, output) of sub-agent tool calls
        self._interrupts = 0

    # -- lifecycle -------------------------------------------------------------------------

    def _reconciler_for(self, cascade_id: str, carry: MapperState | None) -> Reconciler:
        state: MapperState | None = None
        if self.cursor_store is not None:
            cursor = self.cursor_store.load(cascade_id)
            if cursor is not None:
                try:
                    state = MapperState.model_validate(cursor.state)
                except ValueError:
                    log.warning("cursor for %s is unreadable; starting from the beginning", cascade_id)
        if state is None and carry is not None:
            state = rotated_state(carry)
        return Reconciler(cascade_id, state)

    async def start(self) -> None:
        if self.directory is not None:  # what exists as we bind: other conversations, never a /clear
            try:
                self._known = {c.cascade_id for c in await self.directory.list_cascades()} - {self.cascade_id}
            except Exception as exc:
                log.warning("cascade directory unavailable at start (%s); known at the first listing", exc)
        self._reader = asyncio.create_task(self._supervise(), name="agy-harness-reader")
        self._tasks = [asyncio.create_task(self._gate_worker(), name="agy-harness-gates")]
        if self.directory is not None and self.options.directory_interval > 0:
            self._tasks.append(asyncio.create_task(self._directory_loop(), name="agy-harness-directory"))

    async def stop(self) -> None:
        tasks = [
            t
            for t in (self._reader, self._current_ask, *self._tasks, *self._children.values())
            if t is not None
        ]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._inflight:  # let committed events finish reaching the sink
            await asyncio.wait(self._inflight, timeout=2.0)

    async def __aenter__(self) -> Harness:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- read driver -----------------------------------------------------------------------

    async def _supervise(self) -> None:
        backoff = self.options.fallback_backoff
        while True:
            try:
                await self._read()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                self.stats.driver_restarts += 1
                log.exception(
                    "read driver failed (restart %d); restarting in %.1fs",
                    self.stats.driver_restarts,
                    backoff,
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.options.max_backoff)

    async def _read(self) -> None:
        backoff = self.options.fallback_backoff
        index = 0
        while True:
            if not self.sources:
                await self._emit(
                    [
                        Notice(
                            id=f"{self.cascade_id}/notice/no-source",
                            cascade_id=self.cascade_id,
                            level="error",
                            text="no step source can read this agy",
                        )
                    ]
                )
                return
            source = self.sources[min(index, len(self.sources) - 1)]
            fallback = source is not self.sources[0]
            self.stats.current_source = source.name
            try:
                if fallback:  # stay on the fallback for a while, then return to the preferred source
                    await self._consume(source, deadline=asyncio.get_running_loop().time() + backoff)
                else:
                    if await self._consume(source):
                        backoff = self.options.fallback_backoff
                    await asyncio.sleep(0.05)  # a clean end (trailer): re-open
                index = 0
            except SourceUnavailable as exc:
                self.sources.remove(source)
                self.stats.demotions.append(source.name)
                log.warning(
                    "step source %r cannot serve this agy (%s); demoted to %s",
                    source.name,
                    exc,
                    self.sources[0].name if self.sources else "nothing",
                )
                index = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.stats.source_errors += 1
                log.warning(
                    "step source %r failed (%s: %s); %s",
                    source.name,
                    type(exc).__name__,
                    exc,
                    f"retrying in {backoff:.1f}s"
                    if fallback or len(self.sources) == 1
                    else f"falling back to {self.sources[1].name!r} for {backoff:.1f}s",
                )
                if fallback or len(self.sources) == 1:
                    await asyncio.sleep(backoff)
                    index = 0
                else:
                    index = 1
                backoff = min(backoff * 2 + random.uniform(0, 0.1), self.options.max_backoff)

    async def _consume(self, source: StepSource, deadline: float | None = None) -> int:
        """Apply batches until the source ends (or ``deadline``); the number of batches applied.

        The deadline only ever interrupts the wait for the next batch, never an event delivery.
        """
        cascade = self.cascade_id
        loop = asyncio.get_running_loop()
        batches = source.batches(cascade)
        count = 0
        try:
            while True:
                if deadline is None:
                    batch = await anext(batches)
                else:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        return count
                    try:
                        batch = await asyncio.wait_for(anext(batches), remaining)
                    except TimeoutError:
                        return count
                if cascade != self.cascade_id:
                    return count  # rotated away
                await self._apply(batch)
                count += 1
        except StopAsyncIteration:
            return count
        finally:
            with contextlib.suppress(Exception):
                await batches.aclose()  # type: ignore[attr-defined]

    async def _apply(self, batch: StepBatch, reconciler: Reconciler | None = None) -> None:
        reconciler = reconciler or self.reconciler
        self.stats.batches[batch.source or "?"] = self.stats.batches.get(batch.source or "?", 0) + 1
        for raw in batch.steps:
            events = reconciler.feed(raw)
            if events:
                # fed steps are committed: their events must reach the sink even if the reader is cancelled
                task = asyncio.ensure_future(self._emit(events))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
                await asyncio.shield(task)

    async def _with_details(self, events: Sequence[Event]) -> list[Event]:
        """Question gates seen on the stream lack the multi-select flags: read them from a poll."""
        out = list(events)
        for i, event in enumerate(out):
            if isinstance(event, GateOpened) and event.kind == "question":
                try:
                    out[i] = with_poll_details(event, await self.snapshot.read_steps(event.cascade_id))
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("gate %s: could not read its details (%s)", event.gate_id, exc)
        return out

    async def _emit(self, events: Sequence[Event]) -> None:
        """Deliver in order until the sink accepted all; then advance the cursor."""
        events = await self._with_details(events)
        async with self._emit_lock:
            pending = list(events)
            pause = self.options.sink_retry
            while pending:
                try:
                    accepted = await self.sink.deliver(pending)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning(
                        "event sink failed (%s: %s); retrying in %.1fs", type(exc).__name__, exc, pause
                    )
                    accepted = 0
                accepted = max(0, min(accepted, len(pending)))
                self.stats.events += accepted
                pending = pending[accepted:]
                if pending:
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, self.options.max_backoff)
            # after every acknowledged delivery (deltas too: a restart resumes a reply where the
            # consumer's copy ends, so no delta is re-cut under an id it already has)
            mine = (
                bool(events) and events[0].cascade_id == self.reconciler.cascade_id
            )  # a sub-agent's are not cursored
            if self.cursor_store is not None and mine and any(e.type in _CURSOR_TYPES for e in events):
                st = self.reconciler.state
                cursor = Cursor(
                    cascade_id=self.reconciler.cascade_id,
                    committed=sorted(st.committed),
                    state=st.model_dump(mode="json"),
                )
                await asyncio.to_thread(self.cursor_store.save, cursor)  # file I/O off the loop
        for event in events:
            if isinstance(event, ToolResult) and "subagent" in event.name:
                self._subagent_results.append((event.call_id, event.output))
            if isinstance(event, GateOpened):
                self._open_gate(event)
            elif isinstance(event, GateWithdrawn):
                self._withdraw_gate(event.gate_id)

    # -- gates -----------------------------------------------------------------------------

    def _open_gate(self, gate: GateOpened) -> None:
        if gate.gate_id in self._queued or gate.gate_id in self._delivered_gates:
            return
        self._queued[gate.gate_id] = gate
        self._gates.put_nowait(gate)

    def _withdraw_gate(self, gate_id: str) -> None:
        self._queued.pop(gate_id, None)
        current = self._current_gate
        if current is not None and current.gate_id == gate_id and self._current_ask is not None:
            self._current_ask.cancel()

    @property
    def parked_gate(self) -> GateOpened | None:
        """The gate currently put to the human, if any."""
        return self._current_gate

    async def _notice(self, key: str, text: str, level: str = "info") -> None:
        await self._emit(
            [
                Notice(
                    id=f"{key}/notice",
                    cascade_id=self.cascade_id,
                    level=level,  # type: ignore[arg-type]
                    text=text,
                )
            ]
        )

    async def _gate_worker(self) -> None:
        while True:
            gate = await self._gates.get()
            if self._queued.pop(gate.gate_id, None) is None:
                continue  # withdrawn while queued
            try:
                await self._handle_gate(gate)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("gate %s: handling failed", gate.gate_id)
            finally:
                self._current_gate, self._current_ask = None, None

    async def _handle_gate(self, gate: GateOpened) -> None:
        try:
            target = delivery_target(gate, await self.snapshot.read_steps(gate.cascade_id))
            if target is None or target.moved:
                return  # answered elsewhere, or superseded by a retry that is queued as its own gate
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # cannot check now: ask anyway, delivery re-reads agy
            log.info("gate %s: could not re-read steps before asking (%s)", gate.gate_id, exc)
        self._current_gate = gate
        self._current_ask = asyncio.ensure_future(self.sink.ask(gate))
        try:
            answer = await self._current_ask
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                raise
            log.info("gate %s withdrawn from the human", gate.gate_id)
            return
        await self.answer(gate, answer)

    async def answer(self, gate: GateOpened, answer: GateAnswer) -> bool:
        """Deliver ``answer`` to ``gate``: re-read, pick the freshest WAITING step, tell stale from shape."""
        if self.delivery is None:
            await self._notice(
                gate.id, "this harness cannot deliver answers (no interaction adapter)", "error"
            )
            return False
        pause = self.options.fallback_backoff
        for _attempt in range(self.options.max_delivery_attempts):
            try:
                outcome = await self._deliver_once(gate, answer)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # agy unreachable, a 503: the answer is not lost, try again
                log.warning(
                    "gate %s: delivery failed (%s: %s); retrying in %.1fs",
                    gate.gate_id,
                    type(exc).__name__,
                    exc,
                    pause,
                )
                await asyncio.sleep(pause)
                pause = min(pause * 2, self.options.max_backoff)
                continue
            if outcome is not None:
                return outcome
        await self._notice(
            gate.id,
            f"gate {gate.gate_id}: gave up after {self.options.max_delivery_attempts} attempts",
            "error",
        )
        return False

    async def _deliver_once(self, gate: GateOpened, answer: GateAnswer) -> bool | None:
        """One delivery attempt: True delivered, False final refusal (reported), None try again."""
        assert self.delivery is not None
        target = delivery_target(gate, await self.snapshot.read_steps(gate.cascade_id))
        if target is None:
            await self._notice(
                gate.id,
                f"gate {gate.gate_id} was answered elsewhere or is gone; the answer was not delivered",
                "warning",
            )
            return False
        try:
            await self.delivery.deliver(gate.cascade_id, interaction_payload(gate, answer, target.step_index))
        except InteractionRejected as exc:
            kind = classify_rejection(
                gate, target.step_index, await self.snapshot.read_steps(gate.cascade_id)
            )
            if kind == "stale":
                log.info(
                    "gate %s: step %d went stale (%s); re-targeting",
                    gate.gate_id,
                    target.step_index,
                    exc.message,
                )
                return None
            if kind == "shape":
                await self._notice(
                    gate.id,
                    f"agy refused the answer to gate {gate.gate_id} (HTTP {exc.status}: {exc.message}); "
                    "not retrying",
                    "error",
                )
            else:
                await self._notice(
                    gate.id, f"gate {gate.gate_id} is gone; the answer was not delivered", "warning"
                )
            return False
        self._delivered_gates.add(gate.gate_id)
        if target.moved:
            log.info(
                "gate %s timed out meanwhile; delivered to agy's retry at step %d",
                gate.gate_id,
                target.step_index,
            )
        return True

    # -- turns, interrupt ------------------------------------------------------------------

    async def send(self, text: str) -> str:
        """Start a user turn; returns the name of the turn sender that served it."""
        while self.turn_senders:
            sender = self.turn_senders[0]
            try:
                await sender.send(self.cascade_id, text)
                return sender.name
            except SourceUnavailable as exc:
                self.turn_senders.pop(0)
                self.stats.demotions.append(sender.name)
                log.warning(
                    "turn sender %r cannot serve this agy (%s); demoted to %s",
                    sender.name,
                    exc,
                    self.turn_senders[0].name if self.turn_senders else "nothing",
                )
        raise RuntimeError("no turn sender can reach this agy")

    async def interrupt(self) -> InterruptReport:
        """Cancel the running steps; a parked gate is denied too (agy's cancel does not free it)."""
        if self.interrupter is None:
            return InterruptReport(False, detail="no interrupter for this agy")
        denied: list[str] = []
        gate = self._current_gate
        if gate is not None:  # deny first: a cancel after it also stops the reply agy starts on the denial
            if self._current_ask is not None:
                self._current_ask.cancel()
            if await self.answer(gate, GateAnswer(action="decline", allow=False)):
                denied.append(gate.gate_id)
        await self.interrupter.interrupt(self.cascade_id)
        self._interrupts += 1
        detail = "cancelled the running steps" + (f"; denied the parked gate {denied[0]}" if denied else "")
        await self._notice(f"{self.cascade_id}/interrupt/{self._interrupts}", detail)
        return InterruptReport(True, tuple(denied), detail)

    # -- rotation and the run-status backstop ----------------------------------------------

    async def _directory_loop(self) -> None:
        assert self.directory is not None
        while True:
            await asyncio.sleep(self.options.directory_interval)
            try:
                summaries = await self.directory.list_cascades()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("cascade directory unavailable: %s", exc)
                continue
            bound = next((s for s in summaries if s.cascade_id == self.cascade_id), None)
            if (
                bound is not None
                and bound.status.endswith("IDLE")
                and self.reconciler.state.status == "running"
            ):
                self._idle_reports += 1
                if self._idle_reports >= self.options.idle_reports_to_close:
                    self._idle_reports = 0
                    await self._backstop()
            else:
                self._idle_reports = 0
            for s in summaries:
                if (
                    is_child(s)
                    and self.cascade_id in (s.parent_id, s.root_id)
                    and s.cascade_id not in self._children
                ):
                    self._children[s.cascade_id] = asyncio.create_task(
                        self._mirror(s.cascade_id), name=f"agy-harness-subagent-{s.cascade_id}"
                    )
            if self._known is None:  # the listing at start failed: take the first one that works
                self._known = {s.cascade_id for s in summaries} - {self.cascade_id}
            target = rotation_target(self.cascade_id, summaries, self._known)
            if target is not None:
                await self.rotate(target)

    async def _mirror(self, child: str) -> None:
        """A sub-agent's cascade, mirrored as its own event stream, linked to the parent's tool call."""
        call_id = next(
            (c for c, output in reversed(self._subagent_results) if child in output),
            self._subagent_results[-1][0] if self._subagent_results else "",
        )
        await self._emit(
            [
                SubagentStarted(
                    id=f"{self.cascade_id}/subagent/{child}",
                    cascade_id=self.cascade_id,
                    child_cascade_id=child,
                    parent_call_id=call_id,
                )
            ]
        )
        reconciler = Reconciler(child)
        # polled, not streamed: more than a few streams on one HTTP/2 client wedge httpx/httpcore
        # (benchmarks/probe_shared_client.py), and the session's own stream must never stall
        while True:
            try:
                raws = await self.snapshot.read_steps(child)
                await self._apply(
                    StepBatch(cascade_id=child, steps=tuple(raws), snapshot=True, source="subagent"),
                    reconciler,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("sub-agent %s: read failed (%s); retrying", child, exc)
            await asyncio.sleep(self.options.subagent_poll)

    async def _backstop(self) -> None:
        """agy says idle while our turn is open: first read everything agy has (the stream may lag
        behind, or be down), and close the turn only if those steps did not."""
        try:
            raws = await self.snapshot.read_steps(self.cascade_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("run-status backstop: cannot read steps (%s); not closing on partial knowledge", exc)
            return
        await self._apply(
            StepBatch(cascade_id=self.cascade_id, steps=tuple(raws), snapshot=True, source="backstop")
        )
        events = self.reconciler.observe_idle()
        if events:
            await self._emit(events)

    async def rotate(self, new_cascade: str) -> None:
        old = self.cascade_id
        log.info("rotation: %s -> %s", old, new_cascade)
        event = Rotation(
            id=f"{old}/rotation/{new_cascade}", cascade_id=old, old_cascade_id=old, new_cascade_id=new_cascade
        )
        for gate_id in list(self._queued):
            self._withdraw_gate(gate_id)
        if self._current_gate is not None:
            self._withdraw_gate(self._current_gate.gate_id)
        await self._emit([event])
        for task in self._children.values():
            task.cancel()
        self._children.clear()
        self._known = (self._known or set()) | {old}  # never rotate back to the cleared conversation
        self.cascade_id = new_cascade
        self.reconciler = self._reconciler_for(new_cascade, self.reconciler.state)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self._reader = asyncio.create_task(self._supervise(), name="agy-harness-reader")
