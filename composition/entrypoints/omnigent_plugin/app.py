"""``create_app()``: the module omnigent's harness runner serves for ``harness: agy-harness``.

``python -P -m omnigent.runtime.harnesses._runner --harness agy-harness --module
omnigent.community.harness.agy_harness.app --socket ... --conversation-id ...`` imports this module
and serves :func:`create_app`'s FastAPI app: omnigent's :class:`ExecutorAdapter` around an
:class:`~.executor.AgyExecutor`, plus the gate bridge (:meth:`AgyExecutorAdapter._ask_gate`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Response
from omnigent.errors import OmnigentError
from omnigent.server.schemas import (
    CreateResponseRequest,
    ElicitationRequestParams,
    ElicitationResolvedEvent,
)

from agy_harness.adapters.sinks.omnigent.gates import REFUSED_NOTE
from agy_harness.core.answers import AnswerError
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .compat import ExecutorAdapter
from .executor import AgyExecutor
from .gates import answer_from_reply, elicitation_id, elicitation_params

if TYPE_CHECKING:  # (its module moved in omnigent's newer layout: compat.py)
    from omnigent.runtime.harnesses._scaffold import TurnContext

log = logging.getLogger("agy_harness.omnigent_plugin")
ATTEMPTS_KEPT = 1024  # gates whose cards were shown again, remembered (their ids are never reused)


class AgyExecutorAdapter(ExecutorAdapter):
    """omnigent's adapter, plus: gates as elicitations of the current turn; Stop reaches agy first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._attempts: OrderedDict[str, int] = OrderedDict()  # gate id -> the last card shown again

    def _ensure_executor(self) -> AgyExecutor:
        executor = super()._ensure_executor()
        assert isinstance(executor, AgyExecutor)
        if executor._gate_asker is None:
            executor._gate_asker = self._ask_gate
        return executor

    async def run_turn(self, request: CreateResponseRequest, ctx: TurnContext) -> None:
        executor = self._ensure_executor()
        server = os.environ.get("RUNNER_SERVER_URL", "").strip()
        if server and ctx.session_id and executor.mirror_target is None:
            executor.mirror_target = (server, ctx.session_id)
        await super().run_turn(request, ctx)

    async def _ask_gate(self, gate: GateOpened, *, note: str = "") -> GateAnswer | None:
        """Put ``gate`` to the human through the current turn; fail closed.

        None: no omnigent turn is running (the gate waits for the next one). An answer the parser
        cannot read is asked again with the reason; nothing is sent to agy meanwhile. A Stop while
        the question is open denies it (``cancel``). ``note``: why the card is shown again (it gets
        an id of its own, :meth:`_attempt`).
        """
        while True:
            ctx = self._current_ctx
            if ctx is None:
                return None
            attempt = self._attempt(gate.gate_id, again=bool(note))
            eid = elicitation_id(gate, attempt)
            params = ElicitationRequestParams(**elicitation_params(gate, note, attempt))
            try:
                result = await ctx.elicit(eid, params)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                withdrawn = task is not None and task.cancelling() > 0
                retire_card(ctx, eid)  # no surface keeps a card agy no longer waits on
                if withdrawn:
                    raise  # the harness withdrew the gate (answered in agy, timed out, /clear)
                return GateAnswer(action="cancel", allow=False)  # the turn was stopped
            try:
                return answer_from_reply(gate, result.action, result.content)
            except AnswerError as exc:
                log.warning("gate %s: unreadable answer %r: %s", gate.gate_id, result.content, exc)
                note = (
                    REFUSED_NOTE
                    if not gate.answerable
                    else f"Your answer could not be read ({exc}). Nothing was sent to agy; please answer again."
                )

    def _attempt(self, gate_id: str, *, again: bool) -> int:
        """The card's attempt for ``gate_id``: 0 when first asked; each time it is shown ``again`` (the
        old card was answered unreadably, or retired) one more, never reused: an id names one card."""
        if not again:
            return 0
        attempt = self._attempts.pop(gate_id, 0) + 1
        self._attempts[gate_id] = attempt
        while len(self._attempts) > ATTEMPTS_KEPT:
            self._attempts.popitem(last=False)
        return attempt

    async def _handle_interrupt_event(self) -> Response:
        # agy first: its cancel and the parked gate's denial happen while the gate is still ours
        stopped = False
        if self._in_flight and self._executor is not None:
            try:
                outcome = await self._executor.interrupt_turn(self._session_key)
            except Exception:
                log.exception("interrupting agy failed")
                outcome = "failed"
            if outcome == "held":  # agy still waits on a gate only its terminal answers: the turn goes
                return Response(status_code=204)  # on, its card shown again saying why (conversation.py)
            stopped = outcome == "stopped"
        try:
            return await super()._handle_interrupt_event()
        except OmnigentError:
            if stopped:  # the turn ended on our cancel before the scaffold looked: that is a success
                return Response(status_code=204)
            raise


def retire_card(ctx: TurnContext, eid: str) -> None:
    """Tell every omnigent surface the card is gone: the runner relays omnigent's own
    ``response.elicitation_resolved`` to the server, which drops it from the pending list, the
    sidebar count and the cold-load replay (``omnigent/runtime/pending_elicitations.py``)."""
    try:
        ctx.emit(ElicitationResolvedEvent(type="response.elicitation_resolved", elicitation_id=eid))
    except Exception:  # the turn's stream may be gone already (a Stop): nothing left to tell
        log.debug("could not retire card %s", eid, exc_info=True)


def _build_executor() -> AgyExecutor:
    return AgyExecutor()


def create_app() -> FastAPI:
    adapter = AgyExecutorAdapter(executor_factory=_build_executor, harness_label="Antigravity")
    return adapter.build()
