"""Rules that answer a gate before a human is asked (:mod:`agy_harness.ports.policy`), for the gate
bridge: a rule's answer goes through the bridge's one answer path (bound to the gate's digest, as a
human's); a gate a rule denied refuses every other answer, from any surface; a rule's allow agy did
not take puts the gate to the human after all."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from agy_harness.core.answers import carries_reason
from agy_harness.ports.events import GateOpened
from agy_harness.ports.policy import Decision, GatePolicy
from agy_harness.ports.protocols import DecidedBy, GateAnswer

from .decisions import DecisionRecorder
from .emitter import Emitter

log = logging.getLogger("agy_harness.harness")

Answer = Callable[..., Awaitable[bool]]  # GateBridge.answer(gate, answer, decided_by=...)


class RuleAnswers:
    def __init__(
        self,
        *,
        policy: GatePolicy | None,
        emitter: Emitter,
        decisions: DecisionRecorder,
        answer: Answer,
        still_waits: Callable[[GateOpened], bool],
        ask: Callable[[GateOpened], None],
        kept: int,
    ) -> None:
        self.policy = policy  # None: no rules
        self.emitter = emitter
        self.decisions = decisions
        self._answer = answer
        self._still_waits = still_waits  # open and not answered: a rule's allow agy did not take is asked
        self._ask = ask
        self._kept = kept
        self.ruled: OrderedDict[str, tuple[Decision, GateAnswer]] = OrderedDict()  # a rule's, and its answer
        self.tasks: set[asyncio.Task[None]] = set()

    def decision(self, gate_id: str) -> Decision | None:
        """The rule's decision for a gate a rule answered (its rule id and rules hash, for a ledger)."""
        ruled = self.ruled.get(gate_id)
        return ruled[0] if ruled is not None else None

    def denied_otherwise(self, gate_id: str, answer: GateAnswer) -> Decision | None:
        """The rule's decision when a rule denied ``gate_id`` and ``answer`` is not that denial."""
        ruled = self.ruled.get(gate_id)
        if ruled is not None and ruled[0].verdict == "deny" and answer is not ruled[1]:
            return ruled[0]
        return None

    async def tell(self, cascade_id: str) -> None:
        """At the session's start: the rules are off, and why, as a warning notice."""
        for text in self.policy.warnings() if self.policy is not None else []:
            digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]
            await self.emitter.notice(f"{cascade_id}/rules-off/{digest}", text, "warning")

    def take(self, gate: GateOpened) -> bool:
        """A rule allows or denies ``gate``: answered in a task of its own, never put to a human (True);
        False when no rule answers it (or the rules failed: a policy that fails never answers)."""
        if self.policy is None:
            return False
        try:
            decision = self.policy.decide(gate)
        except Exception:
            log.exception("gate %s: the rules failed; it is asked", gate.gate_id)
            return False
        if decision.verdict == "ask":
            return False
        allow = decision.verdict == "allow"
        # a rule's message goes to agy only where its answer carries a reason (runCommand's does not)
        reason = decision.message if carries_reason(gate) else ""
        answer = GateAnswer(allow=True) if allow else GateAnswer(allow=False, deny_reason=reason)
        self.ruled[gate.gate_id] = (decision, answer)
        while len(self.ruled) > self._kept:
            self.ruled.popitem(last=False)
        task = asyncio.ensure_future(self._by_rule(gate, decision, answer))
        task.set_name(f"agy-harness-rule-{gate.gate_id}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def _by_rule(self, gate: GateOpened, decision: Decision, answer: GateAnswer) -> None:
        try:
            by: DecidedBy = self.decisions.by(kind="rule", surface="rule").model_copy(
                update={"rule_id": decision.rule_id, "rules_hash": decision.rules_hash}
            )  # the ledger names the rule and the rule files it was read from
            if await self._answer(gate, answer, decided_by=by):
                await self.emitter.notice(f"{gate.id}/rule", decision.summary(), "info")
            elif decision.verdict == "deny":  # still denied here: no surface approves it
                text = f"{decision.summary()}; the denial did not reach agy: answer it in agy's terminal"
                await self.emitter.notice(f"{gate.id}/rule", text, "warning")
            elif self._still_waits(gate):  # an allow agy did not take: the human is asked
                self.ruled.pop(gate.gate_id, None)
                self._ask(gate)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("gate %s: answering by rule failed", gate.gate_id)
