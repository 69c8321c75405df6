"""Turn control: starting user turns (with demotion across turn senders) and interrupting agy.

Turn senders are tried in preference order (RPC, then tmux); one that says it cannot serve this agy
(:class:`~agy_harness.ports.errors.MethodMissing`) is dropped for good with one log line. An interrupt denies a parked gate
first (agy's cancel does not free it), then cancels the running steps, and reports what it did.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agy_harness.ports.errors import MethodMissing, NoTurnSender
from agy_harness.ports.protocols import DecidedBy, GateAnswer, Interrupter, TurnSender

from .conversation import Conversation, HarnessStats
from .deciders import local_user
from .emitter import Emitter
from .gate_bridge import GateBridge

log = logging.getLogger("agy_harness.harness")

#: An interrupt denies a parked gate but does not wait for an unreachable agy longer than this.
INTERRUPT_DENY_DEADLINE = 5.0


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
    ) -> None:
        self.conversation = conversation
        self.gates = gates
        self.emitter = emitter
        self.turn_senders = list(turn_senders)
        self.interrupter = interrupter
        self.stats = stats or HarnessStats()
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
        if denied:
            plural = "s" if len(denied) > 1 else ""
            detail = f"cancelled the running steps; denied the parked gate{plural} {', '.join(denied)}"
        elif busy:
            detail = "cancelled the running steps"
        else:  # the cancel was sent all the same (harmless), but nothing ran: say so
            detail = "nothing to interrupt: agy is idle"
        await self.emitter.notice(notice_id, detail)
        return InterruptReport(True, tuple(denied), detail)
