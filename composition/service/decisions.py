"""The gate bridge's record keeper: every decision on a gate goes into the decision ledger (a
:class:`~agy_harness.ports.protocols.DecisionLedger`), whoever made it.

* An answer the bridge delivers (a human on a surface, an interrupt's denial, a rule): its
  ``decision`` record is written to the ledger's file before the answer is sent (:meth:`decided`: if
  the ledger cannot record it, the bridge sends nothing; its fsync follows off the answer's path, see
  the port's doc); once agy took it or refused it, a ``delivery`` record says so (:meth:`delivered`).
* A decision made elsewhere, seen on the stream (:meth:`observe`): a gate withdrawn as ``answered``
  that this harness did not answer (agy's own terminal: its verdict read from the step's recorded
  answer), or ``timed out`` (agy's timeout).
* What ran: the tool result of a decided gate's step as an ``outcome`` record: whether it failed, a
  digest and the last lines of its output, and its command as agy's step shows it ran, read after
  the answer -- with what agy proposed and what the human approved where either differs (an edit, a
  hook's rewrite: :func:`~agy_harness.core.decision_record.ran_fields`; the record is built in
  :mod:`.outcome_record`).

An answer agy took at its re-ask of the gate (the gate timed out while the human thought,
:meth:`answered_at`) is that step's decision: the re-ask's withdrawal names the human's decider (not
agy's terminal) and adds no record of its own, and the re-ask's result is the decision's outcome.

Each gate's withdrawal is told who decided it (:meth:`annotate`: ``GateWithdrawn.decided_by``, what
every surface shows on the retired card), ledger or not; with the ledger, also when another session
answered (the ledger names it) or when agy's terminal overtook this harness's answer on its way (agy
recorded the opposite verdict: then, once agy refused this answer, the terminal's is recorded too).

Follow-up records never hold anything up: they are written in the background, in order (the ledger
has one writer), and a failure is logged.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agy_harness.core.answers import CheckedAnswer
from agy_harness.core.approvals import approved_command, ran_command
from agy_harness.core.decision_record import (
    decision_body,
    recorded_command,
    recorded_verdict,
    redact,
    scope_of,
    verdict_of,
)
from agy_harness.core.elicitation import proposed_command
from agy_harness.ports.events import Decider, Event, GateOpened, GateWithdrawn, ToolResult
from agy_harness.ports.protocols import (
    CommandRedactor,
    DecidedBy,
    DeciderKind,
    DecisionLedger,
    LedgerEntry,
)

from .deciders import LOOKUP, decider_now, local_user, recorded_decider, recorded_response
from .outcome_record import RanLine, outcome_body, ran_at

log = logging.getLogger("agy_harness.ledger")

KEPT = 1024  # gates remembered (open times, decided steps)
DRAIN = 5.0  # seconds a stop waits for the background records


def _no_secrets(text: str) -> list[str]:
    return []


def _put(book: OrderedDict[str, Any], key: str, value: Any) -> None:
    book[key] = value
    while len(book) > KEPT:
        book.popitem(last=False)


@dataclass(slots=True)
class _Decided:
    """A decided gate whose step's result is awaited: the decision record's sequence once written
    (0: none of this session's), the step key agy took the answer at once known ("" : not taken), the
    command line the human approved (None: no command) and who decided (an answer delivered here)."""

    gate: GateOpened
    decision: asyncio.Future[int]
    taken: asyncio.Future[str]
    approved: str | None = None
    by: Decider | None = None
    written: bool = False  # its outcome record (one per decision)
    result: ToolResult | None = None  # the step's result, once seen


class DecisionRecorder:
    def __init__(
        self,
        ledger: DecisionLedger | None,
        read_steps: Callable[[GateOpened], Awaitable[list[Any]]],
        user: str = "",
        ran_line: RanLine | None = None,
    ) -> None:
        self.ledger = ledger
        #: agy's steps holding the gate's step (from it on where the snapshot can: not the whole
        #: conversation, which can be tens of megabytes)
        self.read_steps = read_steps
        #: the command line a settled step ran (the bridge's one read shared with the check of what
        #: ran, :mod:`.settled_runs`); else read from ``read_steps``
        self.ran_line = ran_line if ran_line is not None else self._ran_line
        self.user = user or local_user()
        #: how a command line is kept: the ledger's reading of its arguments, else the free-text rules
        self.redact_command = ledger.redact_command if isinstance(ledger, CommandRedactor) else redact
        self._secrets_of = ledger.command_secrets if isinstance(ledger, CommandRedactor) else _no_secrets
        self._opened: OrderedDict[str, float] = OrderedDict()  # gate id -> when it opened (monotonic)
        self._answered: OrderedDict[str, None] = OrderedDict()  # gates this harness answered
        #: step key -> its decided gate, awaiting the step's result
        self._steps: OrderedDict[str, _Decided] = OrderedDict()
        self._gates: OrderedDict[str, GateOpened] = OrderedDict()  # open gates
        self._tasks: set[asyncio.Task[None]] = set()
        self._deciders: OrderedDict[str, Decider] = OrderedDict()  # gate id -> who answered it here
        self._withdrawn: OrderedDict[str, None] = OrderedDict()  # gates agy showed answered
        #: step key of agy's re-ask that took an answer given to an earlier gate -> who decided it
        self._moved: OrderedDict[str, Decider | None] = OrderedDict()

    def by(self, kind: DeciderKind = "human", surface: str = "") -> DecidedBy:
        return DecidedBy(kind=kind, surface=surface, user=self.user)

    # -- decisions the bridge delivers -------------------------------------------------------------

    async def decided(self, gate: GateOpened, answer: CheckedAnswer, by: DecidedBy) -> int:
        """Append the decision record; its sequence (0 when there is no ledger). Raises
        LedgerUnavailable when it could not be written: then nothing may be sent."""
        verdict, detail = verdict_of(answer, self.redact_command)
        decider = decider_now(by, verdict, scope_of(answer))
        _put(self._deciders, gate.gate_id, decider)
        if self.ledger is None:
            return 0
        opened = self._opened.get(gate.gate_id)
        latency = None if opened is None else int((time.monotonic() - opened) * 1000)
        body = decision_body(
            gate, verdict, detail, scope_of(answer), by.model_dump(), latency, self.redact_command
        )
        try:
            seq = await self.ledger.record(LedgerEntry(type="decision", body=body))
        except BaseException:
            self._deciders.pop(gate.gate_id, None)  # nothing was decided here: no surface is named
            raise
        _put(self._answered, gate.gate_id, None)
        step = self._step(gate, approved_command(gate, answer))
        step.by = decider
        step.decision.set_result(seq)
        return seq

    def to_re_ask(self, gate: GateOpened, step_index: int) -> Callable[[], None]:
        """The answer given to ``gate`` is about to go to agy's re-ask at ``step_index``: from now on
        (agy may move on before its reply arrives) the re-ask's withdrawal is this decision's. Returns
        the undo, for a delivery that failed."""
        key = f"{gate.trajectory_id}/{step_index}"
        decided = self._steps.get(gate.step_key)
        mine = decided is not None and decided.gate.gate_id == gate.gate_id
        _put(
            self._moved, key, decided.by if mine and decided is not None else self._deciders.get(gate.gate_id)
        )

        def undo() -> None:
            self._moved.pop(key, None)

        return undo

    def answered_at(self, gate: GateOpened, step_index: int) -> None:
        """agy took the answer given to ``gate`` at ``step_index``: when that is agy's re-ask of it (the
        gate timed out meanwhile), the re-ask's step belongs to this decision -- its withdrawal names
        this decider and records nothing more, its result is this decision's outcome."""
        key = f"{gate.trajectory_id}/{step_index}"
        decided = self._steps.get(gate.step_key)
        if decided is not None and decided.gate.gate_id != gate.gate_id:
            decided = None  # (that step's entry is another gate's)
        if decided is not None and not decided.taken.done():
            decided.taken.set_result(key)
        if step_index == gate.step_index:
            return
        if decided is not None:
            del self._steps[gate.step_key]  # (the timed-out step's own result is not this answer's)
            _put(self._steps, key, decided)
        _put(self._moved, key, decided.by if decided is not None else self._deciders.get(gate.gate_id))

    def _step(self, gate: GateOpened, approved: str | None = None, taken: bool = False) -> _Decided:
        """``gate``'s step, decided: its outcome record waits for the decision's sequence and for the
        step agy took the answer at (``taken``: at the gate's own, already known)."""
        loop = asyncio.get_running_loop()
        decided = _Decided(gate, loop.create_future(), loop.create_future(), approved)
        replaced = self._steps.get(gate.step_key)
        if replaced is not None and replaced.gate.gate_id == gate.gate_id:
            decided.result = replaced.result  # (what ran, seen before this decision was known)
        if taken:
            decided.taken.set_result(gate.step_key)
        _put(self._steps, gate.step_key, decided)
        return decided

    def forget(self, gate: GateOpened) -> None:
        """An answer with no decision record (no ledger) did not reach agy: it decided nothing, so a
        later answer in agy's terminal is not shown as this harness's."""
        self._deciders.pop(gate.gate_id, None)

    def delivered(self, gate: GateOpened, seq: int, taken: bool, refused: bool = False) -> None:
        """agy took the answer of decision ``seq`` (or did not: a notice said why). The ``delivery``
        record says which (``agy``: ``taken``; ``refused`` -- agy refused the answer while it still
        waited, so this agy does not take that kind's answer message; ``not delivered`` otherwise)
        and of which kind (``interaction``): ``agy-harness doctor`` / ``record`` count them per kind."""
        if not taken:
            self._answered.pop(gate.gate_id, None)
            self._deciders.pop(gate.gate_id, None)
        decided = self._steps.get(gate.step_key)
        if decided is not None and decided.gate.gate_id == gate.gate_id and not decided.taken.done():
            decided.taken.set_result(gate.step_key if taken else "")
        agy = "taken" if taken else "refused" if refused else "not delivered"
        body = {
            "conversation": gate.cascade_id,
            "gate_id": gate.gate_id,
            "decision": seq,
            "taken": taken,
            "agy": agy,
            "interaction": gate.interaction,
        }
        self._later(LedgerEntry(type="delivery", body=body))
        if not taken and gate.gate_id in self._withdrawn and gate.step_key not in self._moved:
            self._spawn(self._overtaken_by_agy(self._step(gate, taken=True)))  # (after the delivery record)

    # -- what the stream shows ---------------------------------------------------------------------

    async def annotate(self, event: GateWithdrawn) -> GateWithdrawn:
        """``event`` with who decided it, when this harness knows: its own answer's decider (a human
        on a surface, a rule, an interrupt), the decider the ledger names (another session of this
        user answered it: its surface or its rule, issue #46 item 5), else agy's own terminal, or agy's
        timeout (a gate it saw open)."""
        by = self._deciders.pop(event.gate_id, None)
        if event.reason != "answered":  # agy did not take this harness's answer (changed, cancelled)
            by = None
        elif by is not None and await self._overtaken(event.gate_id, by):
            by = decider_now(self.by("agy-terminal", "agy"), "", "")
        re_ask = self._re_ask(event) if event.reason == "answered" else None
        if by is None and re_ask is not None:  # agy's re-ask, that took an answer given here
            by = self._moved.get(re_ask)
        elif by is None and event.gate_id in self._gates:
            if event.reason == "answered":
                gate = self._gates[event.gate_id]
                by = await recorded_decider(self.ledger, gate, self.read_steps) or decider_now(
                    self.by("agy-terminal", "agy"), "", ""
                )
            elif event.reason == "timed out":
                by = decider_now(self.by("timeout"), "timeout", "")
        if by is None or event.decided_by is not None:
            return event
        return event.model_copy(update={"decided_by": by})

    def _re_ask(self, event: GateWithdrawn) -> str | None:
        """The step key of ``event``'s gate when it is agy's re-ask that took an answer given here."""
        gate = self._gates.get(event.gate_id)
        key = gate.step_key if gate is not None else event.step_key
        return key if key in self._moved else None

    def observe(self, events: Sequence[Event]) -> None:
        for event in events:
            if isinstance(event, GateOpened):
                _put(self._opened, event.gate_id, time.monotonic())
                _put(self._gates, event.gate_id, event)
            elif isinstance(event, GateWithdrawn):
                gate = self._gates.pop(event.gate_id, None)
                if self.ledger is None:
                    continue
                if gate is None or gate.step_key in self._moved:
                    continue
                if event.reason == "answered":
                    _put(self._withdrawn, event.gate_id, None)  # (an answer on its way: see delivered)
                if event.gate_id not in self._answered:
                    if event.reason == "answered":
                        self._spawn(self._elsewhere(self._step(gate, taken=True)))
                    elif event.reason == "timed out":
                        self._spawn(self._record_other(gate, "timeout", {}, self.by("timeout")))
            elif isinstance(event, ToolResult) and self.ledger is not None:
                found = self._steps.get(event.step_key)
                if found is not None:
                    found.result = event  # (kept for a decision that replaces this one: delivered)
                    self._spawn(self._outcome(found, event))

    async def _overtaken_by_agy(self, decided: _Decided) -> None:
        """Agy's terminal answered ``decided``'s gate while this harness's answer to it was on its way,
        and agy did not take this one: the answer agy took is a decision too (issue #46 item 4),
        recorded unless another session's is (the ledger's ``unless_decided``); what ran follows it."""
        await self._elsewhere(decided)
        if decided.result is not None:
            await self._outcome(decided, decided.result)

    async def _elsewhere(self, decided: _Decided) -> None:
        """A gate answered without this harness: agy's own terminal. Its verdict is what agy recorded."""
        done = decided.decision
        try:
            done.set_result(await self._agy_terminal(decided))
        finally:
            if not done.done():  # (not recorded: what then ran has no decision to name)
                done.set_result(0)

    async def _overtaken(self, gate_id: str, by: Decider) -> bool:
        """This harness's answer to ``gate_id`` is still on its way (agy has not said it took it) and
        agy recorded the opposite verdict: the answer agy took was typed in its own terminal."""
        gate = self._gates.get(gate_id)
        decided = self._steps.get(gate.step_key) if gate is not None else None
        if gate is None or decided is None or decided.gate.gate_id != gate_id or decided.taken.done():
            return False
        if by.verdict not in ("allow", "deny"):
            return False
        try:
            async with asyncio.timeout(LOOKUP):
                response = await recorded_response(self.read_steps, gate)
        except TimeoutError:
            return False
        verdict, _ = recorded_verdict(gate, response)
        return verdict in ("allow", "deny") and verdict != by.verdict

    async def _agy_terminal(self, decided: _Decided) -> int:
        gate = decided.gate
        response = await recorded_response(self.read_steps, gate)
        if gate.step_key in self._moved:  # agy's re-ask, that took an answer given here meanwhile
            return 0
        verdict, detail = recorded_verdict(gate, response, self.redact_command)
        decided.approved = recorded_command(gate, response)
        return await self._record_other(gate, verdict, detail, self.by("agy-terminal", "agy"))

    async def _record_other(
        self, gate: GateOpened, verdict: str, detail: dict[str, Any], by: DecidedBy
    ) -> int:
        opened = self._opened.get(gate.gate_id)
        latency = None if opened is None else int((time.monotonic() - opened) * 1000)
        body = decision_body(gate, verdict, detail, "once", by.model_dump(), latency, self.redact_command)
        body["unless_decided"] = True  # another session of this user may have answered it: not agy's
        assert self.ledger is not None
        return await self.ledger.record(LedgerEntry(type="decision", body=body))

    async def _outcome(self, decided: _Decided, result: ToolResult) -> None:
        gate = decided.gate
        seq = await decided.decision
        if not seq:
            return  # no decision of this session's (another session recorded it, and what ran)
        if await decided.taken != result.step_key or decided.written:
            return  # not the step that took this answer (the timed-out one agy re-asked), or said
        decided.written = True
        if self._steps.get(result.step_key) is decided:
            del self._steps[result.step_key]
        proposed = proposed_command(gate)
        ran, why = (None, "")
        if proposed or decided.approved is not None:  # a command: what ran is read from agy's step
            ran, why = await ran_at(self.ran_line, gate, result.step_key)
        body = outcome_body(
            gate, seq, result, decided.approved, (ran, why), self._secrets_of, self.redact_command
        )
        await self._write(LedgerEntry(type="outcome", body=body))

    async def _ran_line(self, gate: GateOpened, trajectory: str, index: int) -> str | None:
        return ran_command(await self.read_steps(gate), trajectory, index)

    # -- background writes -------------------------------------------------------------------------

    def _later(self, entry: LedgerEntry) -> None:
        if self.ledger is not None:
            self._spawn(self._write(entry))

    async def _write(self, entry: LedgerEntry) -> None:
        assert self.ledger is not None
        await self.ledger.record(entry)

    def _spawn(self, job: Awaitable[object]) -> None:
        async def run() -> None:
            try:
                await job
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("decision ledger: a record was not written: %s", exc)

        def done(task: asyncio.Task[None]) -> None:
            self._tasks.discard(task)
            if inspect.iscoroutine(job) and inspect.getcoroutinestate(job) == inspect.CORO_CREATED:
                job.close()  # cancelled before it ran (the loop stopped after the drain): said, not silent
                log.warning("decision ledger: a record was not written: the session stopped first")

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(done)

    async def drain(self) -> None:
        """Wait for the records written in the background (a stop, a test)."""
        try:
            async with asyncio.timeout(DRAIN):
                while self._tasks:
                    await asyncio.gather(*list(self._tasks), return_exceptions=True)
        except TimeoutError:
            log.warning("decision ledger: %d records still unwritten at stop", len(self._tasks))
