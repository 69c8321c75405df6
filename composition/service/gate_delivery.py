"""Delivering one checked answer to exactly the request it was given for (used by the gate bridge).

Two channels, both bound to the gate's digest (:mod:`agy_harness.core.binding`):

* **RPC** (:meth:`AnswerDelivery.rpc`): re-read agy, take only the target
  :func:`~agy_harness.core.elicitation.delivery_target` allows (the surfaced step while it still asks
  exactly that, or agy's timeout re-ask of the identical request), deliver; anything else is refused
  with a notice and never sent. Transient failures are retried with backoff while the step waits, up
  to ``answer_deadline``. When agy cannot be re-read, only a gate the stream still shows open (or its
  timeout re-ask) is a target.
* **agy's own prompt** (:meth:`AnswerDelivery.typed`, :mod:`.gate_typing`), when agy's pane is known: keys are typed only
  while agy waits on that request ALONE (no other step of the conversation is WAITING, so no
  following prompt can appear before the keys land: agy asks its next request only after this one is
  answered) and the pane's last prompt shows exactly that request with nothing typed. Otherwise
  nothing is typed, a notice says so, and the caller goes over RPC (or, for "allow always", refuses).
  Nothing is ever typed after an RPC answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from agy_harness.core import steps as S
from agy_harness.core.answers import Allow, CheckedAnswer, parse_answer
from agy_harness.core.elicitation import (
    Refused,
    Target,
    classify_rejection,
    delivery_target,
    freshest_open,
    interaction_payload,
)
from agy_harness.core.kinds import describe
from agy_harness.core.tui_keys import answer_keys, persist_keys, persist_offered
from agy_harness.ports.events import AGY_REFUSED, GateOpened
from agy_harness.ports.protocols import (
    GateAnswer,
    InteractionDelivery,
    InteractionRejected,
    SessionClock,
    StepSnapshot,
    StepSnapshotFrom,
    TuiKeys,
)

from .clock import LoopClock
from .conversation import HarnessOptions
from .emitter import Emitter, Level
from .gate_typing import PromptTyping

log = logging.getLogger("agy_harness.harness")

#: what the stream showed: the open gates, and the closed ones with why they closed
Knowledge = Callable[[], tuple[list[GateOpened], dict[str, tuple[GateOpened, str]]]]
#: claims the gate of agy's re-ask (at a step index) of a gate's request; its release, or None when
#: that gate already took an answer
ClaimReAsk = Callable[[GateOpened, int], Callable[[], None] | None]

#: told that agy took an answer (the gate, the answer, the step index it went to)
Answered = Callable[[GateOpened, CheckedAnswer, int], None]


class Watch(Protocol):
    """What follows an answer agy took (:class:`.gate_watch.GateWatch`)."""

    def answered(self, gate: GateOpened, answer: CheckedAnswer, step_index: int) -> None: ...

    def refuse_scope(self, interaction: str, scope: str) -> None: ...


def _holds(raws: list[Any], trajectory_id: str, index: int) -> bool:
    """``raws`` hold the step ``index`` of ``trajectory_id``."""
    for raw in raws:
        step = S.parse_step(raw)
        if step is not None and (step.key.trajectory_id, step.key.step_index) == (trajectory_id, index):
            return True
    return False


class AnswerDelivery(PromptTyping):
    def __init__(
        self,
        *,
        snapshot: StepSnapshot,
        emitter: Emitter,
        options: HarnessOptions,
        knowledge: Knowledge,
        claim_re_ask: ClaimReAsk,
        delivery: InteractionDelivery | None = None,
        tui: TuiKeys | None = None,
        clock: SessionClock | None = None,
        answered: Answered | None = None,
    ) -> None:
        self.claim_re_ask = claim_re_ask
        self.answered = answered
        #: gates whose answer agy refused for its shape while it still waited (a field it does not take)
        self.refused_shape: set[str] = set()
        self.clock = clock if clock is not None else LoopClock()
        self.snapshot = snapshot
        self.emitter = emitter
        self.options = options
        self.knowledge = knowledge
        self.delivery = delivery
        self.tui = tui

    async def refuse(self, gate: GateOpened, why: str, level: Level = "error") -> bool:
        await self.emitter.notice(gate.id, f"gate {gate.gate_id}: answer refused, nothing sent: {why}", level)
        return False

    async def deliver(
        self, gate: GateOpened, answer: CheckedAnswer, deadline: float | None, watch: Watch
    ) -> bool:
        """``answer`` to ``gate``: "allow always" into agy's own menu (or, where agy offers none for
        the request, allowed once with a notice); an answer agy's prompt can take typed there when it
        shows exactly this request; else over RPC (a refused ``scope`` falls back to agy's menu, once).
        ``refused_shape`` keeps the gate when agy refused any answer's shape: the caller sets it aside."""
        if isinstance(answer.verdict, Allow) and answer.verdict.persist is not None:
            if persist_offered(gate):
                return await self.persist(gate, answer)
            await self.emitter.notice(
                gate.id, "agy offers no allow-always for this request: it is allowed once", "warning"
            )
            answer = parse_answer(gate, True)  # the same allow, once
        keys = answer_keys(gate, answer) if self.tui is not None else None
        if keys is not None:
            typed = await self.typed(gate, keys, "answer")
            if typed:
                watch.answered(gate, answer, gate.step_index)
            if typed is not None:
                return typed
        delivered = await self.rpc(gate, answer, deadline)
        scope = answer.verdict.scope if isinstance(answer.verdict, Allow) else None
        if not delivered and scope is not None and gate.gate_id in self.refused_shape:
            self.refused_shape.discard(gate.gate_id)  # the scope field, not the request: not set aside
            return await self.scope_refused(gate, scope, watch.refuse_scope)
        return delivered

    # -- allow always ------------------------------------------------------------------------

    async def scope_refused(
        self, gate: GateOpened, scope: str, refuse_scope: Callable[[str, str], None]
    ) -> bool:
        """agy refused the RPC ``scope`` field (its shape, while the step still waits): the scope is
        not offered again this session, and -- the version gate's fallback -- where agy's own menu
        offers that grant and its pane is known, the grant is typed there instead."""
        refuse_scope(gate.interaction, scope)
        persist = {"conversation": "session", "global": "always"}.get(scope)
        if persist is None or self.tui is None or not persist_offered(gate):
            await self.emitter.notice(
                f"{gate.id}/scope-refused",
                f"agy refused the grant ({scope}) by RPC; it is no longer offered in this session: "
                "answer again (allow once), or from agy's pane (attach --tmux)",
                "warning",
            )
            return False
        log.warning("gate %s: agy refused the scope field; typing agy's own menu key instead", gate.gate_id)
        return await self.persist(gate, parse_answer(gate, GateAnswer(allow=True, persist=persist)))

    async def persist(self, gate: GateOpened, answer: CheckedAnswer) -> bool:
        """ "Allow always": typed into agy's own menu, which records agy's own pattern and answers the
        step (the RPC carries only allow). Refused, nothing sent, where that is not possible."""
        keys = persist_keys(gate, answer)
        if keys is None:
            return await self.refuse(gate, "allow always applies only to allowing a permission")
        if self.tui is None:
            return await self.refuse(
                gate, "allow always needs agy's pane (attach --tmux): only agy's own menu records the rule"
            )
        typed = await self.typed(gate, keys, "allow always")
        if typed is None:
            return await self.refuse(gate, "allow always goes only into agy's prompt for this request")
        return typed

    # -- where ---------------------------------------------------------------------------------

    async def steps_from(self, gate: GateOpened, index: int | None = None) -> list[Any]:
        """agy's steps from the gate's step (or ``index``) on: all an answer's target, agy's re-ask and
        the recorded answer need -- read where the snapshot can (``stepOffset``: a whole re-read of a
        large conversation held the loop, and outgrew the answer cap), else, or when the step is not
        there (another trajectory's index), the whole conversation."""
        at = gate.step_index if index is None else index
        snapshot = self.snapshot
        if isinstance(snapshot, StepSnapshotFrom) and at > 0:
            raws = await snapshot.read_steps_from(gate.cascade_id, at)
            if _holds(raws, gate.trajectory_id, at):
                return raws
        return await snapshot.read_steps(gate.cascade_id)

    async def target(self, gate: GateOpened) -> Target | Refused:
        """Where the answer may go now; raises when agy cannot be read and the stream shows nothing
        that may take it."""
        try:
            raws = await self.steps_from(gate)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            open_gates, closed = self.knowledge()
            target = freshest_open(gate, open_gates, closed)
            if target is None:
                raise
            log.info(
                "gate %s: re-read failed (%s); delivering to step %d, which the stream shows waiting",
                gate.gate_id,
                exc,
                target.step_index,
            )
            return target
        return delivery_target(gate, raws)

    # -- RPC -------------------------------------------------------------------------------------

    async def rpc(self, gate: GateOpened, answer: CheckedAnswer, deadline: float | None) -> bool:
        limit = self.options.answer_deadline if deadline is None else deadline
        end = self.clock.monotonic() + limit
        pause = self.options.fallback_backoff
        attempts = 0
        while True:
            attempts += 1
            try:
                outcome = await self._once(gate, answer)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # agy unreachable, a timeout, a failed re-read: not lost, retried
                log.warning(
                    "gate %s: delivery failed (%s: %s); retrying in %.1fs",
                    gate.gate_id,
                    type(exc).__name__,
                    exc,
                    pause,
                )
                outcome = None
            if outcome is not None:
                return outcome
            if self.clock.monotonic() + pause > end:
                await self.emitter.notice(
                    gate.id,
                    f"gate {gate.gate_id}: agy did not take the answer within {limit:g}s ({attempts} attempts);"
                    " it was not delivered, answer again to retry",
                    "error",
                )
                return False
            await self.clock.sleep(pause)
            pause = min(pause * 2, self.options.max_backoff)

    async def _once(self, gate: GateOpened, answer: CheckedAnswer) -> bool | None:
        """One delivery attempt: True delivered, False final (reported), None try again."""
        assert self.delivery is not None
        target = await self.target(gate)
        if isinstance(target, Refused):
            return await self.refuse(
                gate, target.detail, "error" if target.reason == "elsewhere" else "warning"
            )
        release: Callable[[], None] | None = None
        if target.moved:  # agy's re-ask is a gate of its own: it takes this answer, and no other
            release = self.claim_re_ask(gate, target.step_index)
            if release is None:
                return await self.refuse(gate, "agy's re-ask of it already took an answer", "warning")
        try:
            await self.delivery.deliver(gate.cascade_id, interaction_payload(gate, answer, target.step_index))
        except BaseException as exc:
            if release is not None:
                release()
            if isinstance(exc, InteractionRejected):
                return await self._rejected(gate, target, exc)
            raise
        if self.answered is not None:
            self.answered(gate, answer, target.step_index)
        if target.moved:
            log.info(
                "gate %s timed out meanwhile; delivered to agy's re-ask at step %d",
                gate.gate_id,
                target.step_index,
            )
        return True

    async def _rejected(self, gate: GateOpened, target: Target, exc: InteractionRejected) -> bool | None:
        if exc.reason == "transient":  # (classified where it was raised: ports.errors)
            log.warning("gate %s: agy failed transiently (%s)", gate.gate_id, exc)
            return None
        raws = await self.steps_from(gate)  # a failure: retried
        kind = classify_rejection(gate, target.step_index, raws)
        if kind == "stale":
            log.info(
                "gate %s: step %d went stale (%s); re-targeting", gate.gate_id, target.step_index, exc.message
            )
            return None
        if kind == "shape":
            self.refused_shape.add(gate.gate_id)
            await self.emitter.notice(
                gate.id,
                f"{AGY_REFUSED} to: {describe(gate)} ({exc.detail}) while it still waits; set aside "
                f"here, not asked again: answer it in agy's terminal (gate {gate.gate_id})",
                "error",
            )
        else:
            await self.emitter.notice(
                gate.id, f"gate {gate.gate_id} is gone; the answer was not delivered", "warning"
            )
        return False
