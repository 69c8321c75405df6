"""Turn control: starting user turns (with demotion across turn senders) and interrupting agy.

Turn senders are tried in preference order (RPC, then tmux); one that says it cannot serve this agy
(:class:`~agy_harness.ports.errors.MethodMissing`) is dropped for good with one log line. An interrupt denies a parked gate
first (agy's cancel does not free it), then cancels the running steps, and reports what it did: what
agy's own steps say once the turn's end has reached the user (:mod:`agy_harness.core.interrupt_outcome`),
never the harness's lagging view (at ``--pace 0`` agy had often finished the reply already, and its
last text arrived after a notice that said it was cancelled: issue 47).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agy_harness.core.interrupt_outcome import TurnEnd, turn_end
from agy_harness.ports.errors import MethodMissing, NoTurnSender
from agy_harness.ports.protocols import (
    DecidedBy,
    GateAnswer,
    Interrupter,
    StepSnapshot,
    StepSnapshotFrom,
    TurnSender,
)

from .conversation import Conversation, HarnessStats
from .deciders import local_user
from .emitter import Emitter
from .gate_bridge import GateBridge

log = logging.getLogger("agy_harness.harness")

#: An interrupt denies a parked gate but does not wait for an unreachable agy longer than this.
INTERRUPT_DENY_DEADLINE = 5.0
#: After the cancel, agy's steps are read until the turn has ended and its end reached the user, at
#: most this long (then the notice says agy has not stopped yet); one read every poll interval.
INTERRUPT_SETTLE_DEADLINE = 5.0
INTERRUPT_SETTLE_POLL = 0.05

STOPPED = "interrupted: agy cancelled the running steps"
FINISHED = "agy had already finished the reply: nothing was left to interrupt"
NOT_YET = "asked agy to cancel the running steps; its turn has not ended yet"


@dataclass(frozen=True)
class InterruptReport:
    cancelled: bool
    denied_gates: tuple[str, ...] = ()
    detail: str = ""


class TurnControl:
    def __init__(
        self,
        conversation: Conversation,
        *,
        gates: GateBridge,
        emitter: Emitter,
        turn_senders: Sequence[TurnSender] = (),
        interrupter: Interrupter | None = None,
        stats: HarnessStats | None = None,
        snapshot: StepSnapshot | None = None,
    ) -> None:
        self.conversation = conversation
        self.gates = gates
        self.emitter = emitter
        self.turn_senders = list(turn_senders)
        self.interrupter = interrupter
        self.stats = stats or HarnessStats()
        self.snapshot = snapshot  # agy's steps, read after a cancel (None: the harness's view is said)
        self._interrupts = 0
        self._turn_at_send: object = None  # the turn agy showed when we last sent one (None: none sent)

    async def send(self, text: str) -> str:
        """Start a user turn; returns the name of the turn sender that served it."""
        while self.turn_senders:
            sender = self.turn_senders[0]
            try:
                self._turn_at_send = self.conversation.reconciler.state.turn
                await sender.send(self.conversation.cascade_id, text)
                return sender.name
            except MethodMissing as exc:
                self.turn_senders.pop(0)
                self.stats.demotions.append(sender.name)
                log.warning(
                    "turn sender %r cannot serve this agy (%s); demoted to %s",
                    sender.name,
                    exc,
                    self.turn_senders[0].name if self.turn_senders else "nothing",
                )
        raise NoTurnSender("no turn sender can reach this agy")

    def _busy(self) -> bool:
        """agy runs a turn, or one we sent has not shown up yet (its user input not read back)."""
        state = self.conversation.reconciler.state
        sent_unseen = self._turn_at_send is not None and state.turn == self._turn_at_send
        return state.status == "running" or bool(state.gates) or sent_unseen

    async def interrupt(self) -> InterruptReport:
        """Cancel the running steps; a parked gate is denied too (agy's cancel does not free it)."""
        if self.interrupter is None:
            return InterruptReport(False, detail="no interrupter for this agy")
        denied: list[str] = []
        parked = self.gates.parked_gates
        busy = bool(parked) or self._busy()
        self.gates.stop_asking()
        for gate in reversed(parked):  # deny first: a cancel after it also stops the reply agy starts
            denial = GateAnswer(action="decline", allow=False)
            by = DecidedBy(kind="interrupt", user=local_user())  # who decided, for the decision ledger
            if await self.gates.answer(gate, denial, deadline=INTERRUPT_DENY_DEADLINE, decided_by=by):
                denied.append(gate.gate_id)
        self._interrupts += 1
        notice_id = f"{self.conversation.cascade_id}/interrupt/{self._interrupts}"
        try:
            await self.interrupter.interrupt(self.conversation.cascade_id)
        except Exception as exc:  # agy unreachable or refusing: report it, never raise
            detail = f"could not cancel the running steps: {type(exc).__name__}: {exc}"
            log.warning("interrupt: %s", detail)
            await self.emitter.notice(notice_id, detail, "warning")
            return InterruptReport(False, tuple(denied), detail)
        if not busy and not denied:  # the cancel was sent all the same (harmless), but nothing ran: say so
            detail = "nothing to interrupt: agy is idle"
        else:
            detail = await self._what_agy_did()
        if denied:
            plural = "s" if len(denied) > 1 else ""
            detail = f"{detail}; denied the parked gate{plural} {', '.join(denied)}"
        await self.emitter.notice(notice_id, detail, "warning" if detail == NOT_YET else "info")
        return InterruptReport(True, tuple(denied), detail)

    async def _what_agy_did(self) -> str:
        """Read agy's steps until the turn has ended and the reader has shown its end (its last text
        before this notice); say whether agy stopped something or had finished already."""
        if self.snapshot is None:
            return "cancelled the running steps"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + INTERRUPT_SETTLE_DEADLINE
        end, offset = TurnEnd("open"), 0
        while loop.time() < deadline:
            try:
                end = turn_end(await self._read_steps(offset))
                offset += end.turn_at  # the next read starts at the turn (a long conversation is not re-read)
            except Exception as exc:  # agy unreachable: the next read, or the deadline, says so
                log.info("interrupt: reading agy's steps failed: %s: %s", type(exc).__name__, exc)
                end = TurnEnd("open")
            if end.outcome != "open" and end.seen_by(self.conversation.reconciler.state.committed):
                break
            await asyncio.sleep(INTERRUPT_SETTLE_POLL)
        else:
            if end.outcome == "open":
                return NOT_YET
        if self.emitter.inflight:  # the turn's last events still on their way to the sink
            await asyncio.wait(set(self.emitter.inflight), timeout=INTERRUPT_SETTLE_DEADLINE)
        return STOPPED if end.outcome == "stopped" else FINISHED

    async def _read_steps(self, offset: int) -> list[object]:
        snapshot, cascade = self.snapshot, self.conversation.cascade_id
        if offset and isinstance(snapshot, StepSnapshotFrom):
            return list(await snapshot.read_steps_from(cascade, offset))
        assert snapshot is not None
        return list(await snapshot.read_steps(cascade))
