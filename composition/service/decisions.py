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
  hook's rewrite: :func:`~agy_harness.core.decision_record.ran_fields`).

An answer agy took at its re-ask of the gate (the gate timed out while the human thought,
:meth:`answered_at`) is that step's decision: the re-ask's withdrawal names the human's decider (not
agy's terminal) and adds no record of its own, and the re-ask's result is the decision's outcome.

Each gate's withdrawal is told who decided it (:meth:`annotate`: ``GateWithdrawn.decided_by``, what
every surface shows on the retired card), ledger or not.

Follow-up records never hold anything up: they are written in the background, in order (the ledger
has one writer), and a failure is logged.
"""

from __future__ import annotations

import asyncio
import getpass
import hashlib
import inspect
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agy_harness.core import steps as S
from agy_harness.core.answers import CheckedAnswer
from agy_harness.core.approvals import approved_command, ran_command
from agy_harness.core.decision_record import (
    decision_body,
    ran_fields,
    recorded_command,
    recorded_verdict,
    redact,
    scope_of,
    verdict_of,
)
from agy_harness.core.elicitation import proposed_command
from agy_harness.ports.events import Decider, Event, GateOpened, GateWithdrawn, ToolResult
from agy_harness.ports.protocols import DecidedBy, DeciderKind, DecisionLedger, LedgerEntry

log = logging.getLogger("agy_harness.ledger")

KEPT = 1024  # gates remembered (open times, decided steps)
DRAIN = 5.0  # seconds a stop waits for the background records
OUTPUT_TAIL = 400  # characters of a tool's output kept in its outcome record


def local_user() -> str:
    """The user this harness runs as (its uid's name; the uid when it has none)."""
    try:
        return getpass.getuser()
    except Exception:
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else ""


def _put(book: OrderedDict[str, Any], key: str, value: Any) -> None:
    book[key] = value
    while len(book) > KEPT:
        book.popitem(last=False)


def _decider(by: DecidedBy, verdict: str, scope: str) -> Decider:
    at = datetime.now(UTC).isoformat(timespec="seconds")
    return Decider(
        kind=by.kind,
        surface=by.surface,
        user=by.user,
        at=at,
        verdict=verdict,
        scope=scope,
        rule_id=by.rule_id,
    )


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


class DecisionRecorder:
    def __init__(
        self,
        ledger: DecisionLedger | None,
        read_steps: Callable[[GateOpened], Awaitable[list[Any]]],
        user: str = "",
    ) -> None:
        self.ledger = ledger
        #: agy's steps holding the gate's step (from it on where the snapshot can: not the whole
        #: conversation, which can be tens of megabytes)
        self.read_steps = read_steps
        self.user = user or local_user()
        self._opened: OrderedDict[str, float] = OrderedDict()  # gate id -> when it opened (monotonic)
        self._answered: OrderedDict[str, None] = OrderedDict()  # gates this harness answered
        #: step key -> its decided gate, awaiting the step's result
        self._steps: OrderedDict[str, _Decided] = OrderedDict()
        self._gates: OrderedDict[str, GateOpened] = OrderedDict()  # open gates
        self._tasks: set[asyncio.Task[None]] = set()
        self._deciders: OrderedDict[str, Decider] = OrderedDict()  # gate id -> who answered it here
        #: step key of agy's re-ask that took an answer given to an earlier gate -> who decided it
        self._moved: OrderedDict[str, Decider | None] = OrderedDict()

    def by(self, kind: DeciderKind = "human", surface: str = "") -> DecidedBy:
        return DecidedBy(kind=kind, surface=surface, user=self.user)

    # -- decisions the bridge delivers -------------------------------------------------------------

    async def decided(self, gate: GateOpened, answer: CheckedAnswer, by: DecidedBy) -> int:
        """Append the decision record; its sequence (0 when there is no ledger). Raises
        LedgerUnavailable when it could not be written: then nothing may be sent."""
        verdict, detail = verdict_of(answer)
        decider = _decider(by, verdict, scope_of(answer))
        _put(self._deciders, gate.gate_id, decider)
        if self.ledger is None:
            return 0
        opened = self._opened.get(gate.gate_id)
        latency = None if opened is None else int((time.monotonic() - opened) * 1000)
        body = decision_body(gate, verdict, detail, scope_of(answer), by.model_dump(), latency)
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

    # -- what the stream shows ---------------------------------------------------------------------

    def annotate(self, event: GateWithdrawn) -> GateWithdrawn:
        """``event`` with who decided it, when this harness knows: its own answer's decider (a human
        on a surface, a rule, an interrupt), agy's own terminal or agy's timeout (a gate it saw open)."""
        by = self._deciders.pop(event.gate_id, None)
        if event.reason != "answered":  # agy did not take this harness's answer (changed, cancelled)
            by = None
        re_ask = self._re_ask(event) if event.reason == "answered" else None
        if by is None and re_ask is not None:  # agy's re-ask, that took an answer given here
            by = self._moved.get(re_ask)
        elif by is None and event.gate_id in self._gates:
            if event.reason == "answered":
                by = _decider(self.by("agy-terminal", "agy"), "", "")
            elif event.reason == "timed out":
                by = _decider(self.by("timeout"), "timeout", "")
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
                if (
                    gate is not None
                    and event.gate_id not in self._answered
                    and gate.step_key not in self._moved
                ):
                    if event.reason == "answered":
                        self._spawn(self._elsewhere(self._step(gate, taken=True)))
                    elif event.reason == "timed out":
                        self._spawn(self._record_other(gate, "timeout", {}, self.by("timeout")))
            elif isinstance(event, ToolResult) and self.ledger is not None:
                found = self._steps.get(event.step_key)
                if found is not None:
                    self._spawn(self._outcome(found, event))

    async def _elsewhere(self, decided: _Decided) -> None:
        """A gate answered without this harness: agy's own terminal. Its verdict is what agy recorded."""
        done = decided.decision
        try:
            done.set_result(await self._agy_terminal(decided))
        finally:
            if not done.done():  # (not recorded: what then ran has no decision to name)
                done.set_result(0)

    async def _agy_terminal(self, decided: _Decided) -> int:
        gate = decided.gate
        response: dict[str, Any] | None = None
        try:
            for step in map(S.parse_step, await self.read_steps(gate)):
                if step is not None and (step.key.trajectory_id, step.key.step_index) == (
                    gate.trajectory_id,
                    gate.step_index,
                ):
                    response = S.interaction_response(step)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("gate %s: agy's recorded answer could not be read (%s)", gate.gate_id, exc)
        if gate.step_key in self._moved:  # agy's re-ask, that took an answer given here meanwhile
            return 0
        verdict, detail = recorded_verdict(gate, response)
        decided.approved = recorded_command(gate, response)
        return await self._record_other(gate, verdict, detail, self.by("agy-terminal", "agy"))

    async def _record_other(
        self, gate: GateOpened, verdict: str, detail: dict[str, Any], by: DecidedBy
    ) -> int:
        opened = self._opened.get(gate.gate_id)
        latency = None if opened is None else int((time.monotonic() - opened) * 1000)
        body = decision_body(gate, verdict, detail, "once", by.model_dump(), latency)
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
        output = result.output
        body: dict[str, Any] = {
            "conversation": gate.cascade_id,
            "gate_id": gate.gate_id,
            "decision": seq,
            "tool": result.name,
            "command": "",
            "error": result.is_error,
            "output_sha256": hashlib.sha256(output.encode("utf-8", "replace")).hexdigest(),
            "output_chars": len(output),
            "output_tail": redact(output[-OUTPUT_TAIL:]),
        }
        proposed = proposed_command(gate)
        if proposed or decided.approved is not None:  # a command: what ran is read from agy's step
            ran, why = await self._ran(gate, result.step_key)
            body.update(ran_fields(proposed, decided.approved, ran, why))
        await self._write(LedgerEntry(type="outcome", body=body))

    async def _ran(self, gate: GateOpened, step_key: str) -> tuple[str | None, str]:
        """The command line the step that took ``gate``'s answer shows it ran (agy's
        ``runCommand.commandLine`` once it settled, after any edit or hook), or None and why it could
        not be read."""
        trajectory, _, index = step_key.rpartition("/")
        try:
            ran = ran_command(await self.read_steps(gate), trajectory, int(index))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return None, f"agy's steps could not be read ({type(exc).__name__}: {exc})"
        return ran, "" if ran is not None else "agy's step shows no command line that ran"

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
