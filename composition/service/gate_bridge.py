"""The gate bridge: gates agy opened, put to the human, and each answer delivered to exactly the
request the human saw.

Gates arrive on the session's bus (:mod:`.bus`: what the emitter delivered). Each is asked in its own task, so a gate
never waits for another's answer; a sink shows a bounded number of asks at once
(``max_concurrent_asks``, default :data:`MAX_ASKS`; the terminal shows one): when a new gate finds no
room, the oldest ask gives way and goes back to a backlog that is served newest first, so a flood of
gates can never keep the newest request from the human. A gate of the turn agy runs (its ``turn``,
the newest user message's executionId) goes first: it never gives way to a gate of another turn (one
waits in the backlog instead), and the backlog serves it before those (issue #35 case 8: 20 gates of
no running turn appended after the real one pushed it off the ACP client and the terminal, and
the human's answer to it, given meanwhile, was dropped). A gate is re-checked against agy before it is
asked (answered elsewhere or superseded: not asked), and a gate withdrawn while asked cancels the ask.
The ask itself is :mod:`.gate_asking`.

:meth:`GateBridge.answer` is the one way an answer reaches agy (the human's, through the sink; the API's
``Session.answer``; the interrupt's denial). It claims the gate first: a gate takes one answer, and a
second one (a double click, a retry, another front end) is refused with a notice. A gate that closed
(answered, denied in agy's terminal, withdrawn because its request changed) refuses later answers. The
delivery itself (:mod:`.gate_delivery`) goes only to a WAITING step with the gate's digest.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from agy_harness.core.answers import AnswerError, CheckedAnswer, parse_answer
from agy_harness.core.steps import turn_of_user_key
from agy_harness.ports.errors import LedgerUnavailable
from agy_harness.ports.events import Event, GateOpened, GateWithdrawn, UserMessage
from agy_harness.ports.policy import Decision, GatePolicy
from agy_harness.ports.protocols import (
    DecidedBy,
    DecisionLedger,
    EventSink,
    GateAnswer,
    InteractionDelivery,
    SessionClock,
    StepSnapshot,
    TuiKeys,
)
from agy_harness.ports.tasks import reap

from .conversation import HarnessOptions
from .decisions import DecisionRecorder
from .emitter import Emitter
from .gate_asking import HumanAsking
from .gate_delivery import AnswerDelivery
from .gate_rules import RuleAnswers
from .gate_watch import GateWatch
from .settled_runs import SettledRuns

log = logging.getLogger("agy_harness.harness")

MAX_ASKS = 16  # asks a sink shows at once unless it says otherwise (``max_concurrent_asks``)
CLOSED_KEPT = 1024  # closed gates remembered (their answers are refused, their re-asks followed)


class GateBridge(HumanAsking):
    def __init__(
        self,
        *,
        snapshot: StepSnapshot,
        sink: EventSink,
        emitter: Emitter,
        delivery: InteractionDelivery | None = None,
        options: HarnessOptions | None = None,
        tui: TuiKeys | None = None,
        clock: SessionClock | None = None,
        ledger: DecisionLedger | None = None,
        policy: GatePolicy | None = None,
    ) -> None:
        self.snapshot = snapshot
        #: what a decided step ran: one read for the check of it and the outcome record
        self.runs = SettledRuns(snapshot)
        # the decision ledger's records (agy's recorded answer read from the gate's step on)
        self.decisions = DecisionRecorder(
            ledger,
            lambda gate: self._send.steps_from(gate),
            ran_line=lambda gate, trajectory, index: self.runs.ran(gate.cascade_id, trajectory, index),
        )
        self.sink = sink
        self.emitter = emitter
        self.options = options or HarnessOptions()
        self.max_asks = max(1, int(getattr(sink, "max_concurrent_asks", MAX_ASKS)))
        self._open: dict[str, GateOpened] = {}  # gates the stream shows WAITING
        self._closed: OrderedDict[str, tuple[GateOpened, str]] = OrderedDict()  # withdrawn, and why
        self._asks: dict[str, asyncio.Task[None]] = {}  # in flight, oldest first
        self._backlog: dict[str, GateOpened] = {}  # open, waiting for room with the human
        self._claimed: set[str] = set()  # gates an answer was taken for (being delivered, or delivered)
        self._aside: OrderedDict[str, None] = OrderedDict()  # agy refuses every answer: never asked again
        self._refused: set[str] = set()  # gates whose answer agy refused (for the delivery record)
        self._turns: dict[str, str] = {}  # conversation -> its newest user message's executionId
        self.watch = GateWatch(snapshot=snapshot, emitter=emitter, runs=self.runs)  # grants, what ran
        self._send = AnswerDelivery(
            snapshot=snapshot,
            emitter=emitter,
            options=self.options,
            knowledge=lambda: (list(self._open.values()), dict(self._closed)),
            claim_re_ask=self._claim_for_re_ask,
            delivery=delivery,
            tui=tui,
            clock=clock,
            answered=self._answered,
        )
        self.rules = RuleAnswers(  # rules that answer a gate before a human is asked
            policy=policy,
            emitter=emitter,
            decisions=self.decisions,
            answer=self.answer,
            still_waits=lambda g: g.gate_id in self._open and g.gate_id not in self._claimed,
            ask=self._start,
            kept=CLOSED_KEPT,
        )
        self._stopped = False
        emitter.bus.on_delivered(self.observe)
        emitter.withdrawn_by = self.decisions.annotate

    @property
    def delivery(self) -> InteractionDelivery | None:
        return self._send.delivery

    @delivery.setter
    def delivery(self, value: InteractionDelivery | None) -> None:
        self._send.delivery = value

    @property
    def tui(self) -> TuiKeys | None:
        """agy's own terminal, when its pane is known: answers its menu can express are typed there
        (only onto that request's prompt), and "allow always" goes there (see core.tui_keys)."""
        return self._send.tui

    @tui.setter
    def tui(self, value: TuiKeys | None) -> None:
        self._send.tui = value

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Nothing to start: each gate is asked in its own task."""
        self._stopped = False

    def stop(self) -> list[asyncio.Task[Any]]:
        """The harness stops: nothing more is asked; the asks in progress, for it to cancel."""
        self._stopped = True
        self._backlog.clear()
        return [*self._asks.values(), *self.watch.tasks, *self.rules.tasks]

    # -- gates in --------------------------------------------------------------------------

    def observe(self, events: Sequence[Event]) -> None:
        """What the sink acknowledged (the bus): open what was opened, withdraw what was withdrawn, in order."""
        self.decisions.observe(events)
        for event in events:
            if isinstance(event, UserMessage):
                self._turns[event.cascade_id] = turn_of_user_key(event.step_key)
            if isinstance(event, GateOpened):
                self._open[event.gate_id] = event
                self.open(event)
            elif isinstance(event, GateWithdrawn):
                gate = self._open.pop(event.gate_id, None)
                if gate is not None:
                    self._closed[event.gate_id] = (gate, event.reason)
                    while len(self._closed) > CLOSED_KEPT:
                        self._closed.popitem(last=False)
                self.withdraw(event.gate_id)

    def open(self, gate: GateOpened) -> None:
        if self._stopped or not gate.answerable or gate.gate_id in self._claimed:
            return  # (a gate only agy's terminal can answer is never put to a human here)
        if gate.gate_id in self._asks or gate.gate_id in self._backlog or gate.gate_id in self.rules.ruled:
            return
        if gate.gate_id in self._aside:  # bogus (agy refused an answer to it): not queued before a real one
            return
        if self.rules.take(gate):
            return
        if len(self._asks) >= self.max_asks:  # no room: the oldest ask gives way to the newest gate
            others = [i for i in self._asks if not self._current(self._open.get(i))]
            if not others and not self._current(gate):  # the running turn's asks never give way to it
                self._backlog[gate.gate_id] = gate
                log.info("gate %s waits: the running turn's requests are asked first", gate.gate_id)
                return
            oldest = others[0] if others else next(iter(self._asks))
            self._asks.pop(oldest).cancel()
            previous = self._open.get(oldest)
            if previous is not None:
                self._backlog[oldest] = previous
            log.info("gate %s gives way to the newer %s; it is asked again later", oldest, gate.gate_id)
        self._start(gate)

    def _current(self, gate: GateOpened | None) -> bool:
        """``gate`` belongs to the turn agy runs (the newest user message's executionId); False for a
        gate or a turn without one."""
        return gate is not None and bool(gate.turn) and gate.turn == self._turns.get(gate.cascade_id)

    def _start(self, gate: GateOpened) -> None:
        self._backlog.pop(gate.gate_id, None)
        task = asyncio.ensure_future(self._ask(gate))
        task.set_name(f"agy-harness-ask-{gate.gate_id}")
        self._asks[gate.gate_id] = task

    def _refill(self) -> None:
        while self._backlog and len(self._asks) < self.max_asks and not self._stopped:
            waiting = list(reversed(self._backlog))  # newest first, the running turn's before others
            newest = next((i for i in waiting if self._current(self._backlog[i])), waiting[0])
            self._start(self._backlog[newest])

    def withdraw(self, gate_id: str) -> None:
        self._backlog.pop(gate_id, None)
        task = self._asks.pop(gate_id, None)
        if task is not None:
            task.cancel()
        self._refill()

    def withdraw_all(self) -> None:
        """Rotation: nothing queued or asked belongs to the new conversation."""
        self._open.clear()
        self._backlog.clear()
        for gate_id in list(self._asks):
            self.withdraw(gate_id)

    @property
    def parked_gate(self) -> GateOpened | None:
        """The newest gate currently put to the human, if any."""
        for gate_id in reversed(self._asks):
            gate = self._open.get(gate_id)
            if gate is not None:
                return gate
        return None

    @property
    def parked_gates(self) -> list[GateOpened]:
        """Every gate currently put to the human, oldest first."""
        return [g for g in (self._open.get(i) for i in self._asks) if g is not None]

    def stop_asking(self) -> None:
        """Cancel every ask in progress (the interrupt answers the gates itself)."""
        for gate_id in list(self._asks):
            self._asks.pop(gate_id).cancel()
        self._backlog.clear()

    # -- delivering ------------------------------------------------------------------------

    async def answer(
        self,
        gate: GateOpened,
        answer: GateAnswer,
        *,
        deadline: float | None = None,
        decided_by: DecidedBy | None = None,
    ) -> bool:
        """Deliver ``answer`` to exactly ``gate``'s request; True once agy took it.

        The answer is read first (:func:`~agy_harness.core.answers.parse_answer`: a loose GateAnswer
        from a sink or the interrupt; a checked answer bound to this gate is taken as it is, one read
        for another gate is refused; an ambiguous one is refused with a notice, never sent). The gate is
        claimed: a gate that already took an answer refuses another. The human's ask for it, if one is
        in flight elsewhere, ends. Then: "allow always" goes into agy's own menu; an answer agy's menu
        can express is typed into agy's prompt when its pane shows exactly that request; otherwise
        (and whenever nothing was typed) it goes over RPC, to a WAITING step with the gate's digest
        only, retried through transient failures until ``deadline`` (default
        ``options.answer_deadline``). Before anything is sent the decision is recorded in the decision
        ledger (``decided_by``: who decided; default a human through the API): if it cannot be, nothing
        is sent and a notice says why; whether agy took it is recorded after.
        """
        if self.delivery is None:
            await self.emitter.notice(
                gate.id, "this harness cannot deliver answers (no interaction adapter)", "error"
            )
            return False
        denied = self.rules.denied_otherwise(gate.gate_id, answer)
        if denied is not None:
            return await self._send.refuse(gate, f"it was {denied.summary()}", "warning")
        try:
            checked = parse_answer(gate, answer)
        except AnswerError as exc:
            return await self._send.refuse(gate, str(exc))
        if gate.gate_id in self._claimed:
            return await self._send.refuse(gate, "it already took an answer", "warning")
        self._claimed.add(gate.gate_id)  # before any await: one answer per gate
        delivered, seq = False, 0
        self._refused.discard(gate.gate_id)
        try:
            try:
                seq = await self.decisions.decided(
                    gate, checked, decided_by or self.decisions.by(surface="api")
                )
            except LedgerUnavailable as exc:
                return await self._send.refuse(gate, f"the decision ledger could not record it ({exc})")
            await self._end_ask(gate.gate_id)
            delivered = await self._deliver(gate, checked, deadline)
            return delivered
        finally:
            if not delivered:
                self._claimed.discard(gate.gate_id)  # nothing reached agy: it may be answered again
            if seq:
                refused = gate.gate_id in self._refused
                self._refused.discard(gate.gate_id)
                self.decisions.delivered(gate, seq, delivered, refused)
            elif not delivered:
                self.decisions.forget(gate)

    def _answered(self, gate: GateOpened, answer: CheckedAnswer, step_index: int) -> None:
        """agy took ``answer`` at ``step_index`` (the gate's step, or agy's re-ask): both follow that step."""
        self.watch.answered(gate, answer, step_index)
        self.decisions.answered_at(gate, step_index)

    def _claim_for_re_ask(self, gate: GateOpened, step_index: int) -> Callable[[], None] | None:
        """The re-ask's claim (:meth:`_claim_re_ask`), and the ledger told before the answer goes: agy
        may show the re-ask withdrawn before its reply to the answer arrives."""
        release = self._claim_re_ask(gate, step_index)
        if release is None:
            return None
        undo = self.decisions.to_re_ask(gate, step_index)

        def both() -> None:
            release()
            undo()

        return both

    def _claim_re_ask(self, gate: GateOpened, step_index: int) -> Callable[[], None] | None:
        """An answer goes to agy's re-ask of ``gate``: the re-ask's own gate takes no other answer, and
        its ask ends. Returns the claim's release (for a delivery that failed), None if it is taken."""
        for other in list(self._open.values()):
            if (other.trajectory_id, other.step_index, other.digest) != (
                gate.trajectory_id,
                step_index,
                gate.digest,
            ):
                continue
            if other.gate_id in self._claimed:
                return None
            self._claimed.add(other.gate_id)
            self._backlog.pop(other.gate_id, None)
            task = self._asks.pop(other.gate_id, None)
            if task is not None:
                task.cancel()
            return lambda: self._claimed.discard(other.gate_id)
        return lambda: None  # the stream has not shown it yet: nothing else can answer it here

    async def _end_ask(self, gate_id: str) -> None:
        """The gate is answered (here or through the API): the human is no longer asked about it."""
        self._backlog.pop(gate_id, None)
        task = self._asks.pop(gate_id, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await reap(task)
        self._refill()

    async def _deliver(self, gate: GateOpened, answer: CheckedAnswer, deadline: float | None) -> bool:
        delivered = await self._send.deliver(gate, answer, deadline, self.watch)
        shape = gate.gate_id in self._send.refused_shape  # agy refused the answer's shape
        self._send.refused_shape.discard(gate.gate_id)
        if not delivered and shape:  # agy refuses any answer to this WAITING step: bogus or malformed
            self._refused.add(gate.gate_id)  # (the ledger's delivery record says agy refused it)
            self._set_aside(gate)
            await self.emitter.set_aside(gate)  # its card leaves every surface
        return delivered

    def _set_aside(self, gate: GateOpened) -> None:
        """A gate agy refused an answer to while still showing it WAITING (a bogus or malformed gate;
        the delivery's notice said so, once): it is never put to the human again, so a flood of them
        never queues in front of a real request. An API answer still reaches it."""
        self._aside[gate.gate_id] = None
        while len(self._aside) > CLOSED_KEPT:
            self._aside.popitem(last=False)
        self._backlog.pop(gate.gate_id, None)

    # -- rules (:mod:`.gate_rules`) -------------------------------------------------------------

    def rule_decision(self, gate_id: str) -> Decision | None:
        """The rule's decision for a gate a rule answered (its rule id and rules hash, for a ledger)."""
        return self.rules.decision(gate_id)

    async def tell_policy(self, cascade_id: str) -> None:
        """At the session's start: the rules are off, and why, as a warning notice."""
        await self.rules.tell(cascade_id)
