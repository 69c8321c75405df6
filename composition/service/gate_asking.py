"""Asking the human about one gate (the gate bridge's ask task, :class:`HumanAsking`, mixed into
:class:`~.gate_bridge.GateBridge`): the gate is re-checked against agy, put to the sink, and the sink's
answer handed to :meth:`GateBridge.answer`; an answer agy refused while it still waits is asked again
(:data:`ASK_AGAIN` times). Who decided a sink's answer (its human, or its own ``auto_policy``) is
named here too, for the decision ledger.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING

from agy_harness.core.display import one_line
from agy_harness.core.elicitation import Refused, delivery_target
from agy_harness.core.kinds import describe
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import DecidedBy, EventSink, GateAnswer

from .decisions import DecisionRecorder
from .emitter import Emitter
from .gate_delivery import AnswerDelivery

log = logging.getLogger("agy_harness.harness")

ASK_AGAIN = 2  # an answer that was refused while agy still waits is asked again, this many times


def unasked_text(gate: GateOpened, exc: Exception) -> str:
    """What the human is told when the surface could not put ``gate`` to them (the sink's ask failed)."""
    why = one_line(f"{type(exc).__name__}: {exc}")[:300]
    return (
        f"{describe(gate)}: this surface could not show the request ({why}); nothing was answered and "
        "agy still waits: answer it in agy's terminal (agy-harness attach)"
    )


class HumanAsking:
    """The ask task of :class:`~.gate_bridge.GateBridge` (which holds the state named below)."""

    if TYPE_CHECKING:
        sink: EventSink
        emitter: Emitter
        decisions: DecisionRecorder
        max_asks: int
        _open: dict[str, GateOpened]
        _asks: dict[str, asyncio.Task[None]]
        _backlog: dict[str, GateOpened]
        _claimed: set[str]
        _aside: OrderedDict[str, None]
        _send: AnswerDelivery
        _stopped: bool

        def _refill(self) -> None: ...

        async def answer(
            self,
            gate: GateOpened,
            answer: GateAnswer,
            *,
            deadline: float | None = None,
            decided_by: DecidedBy | None = None,
        ) -> bool: ...

    async def _ask(self, gate: GateOpened) -> None:
        me = asyncio.current_task()
        try:
            try:
                target = delivery_target(gate, await self._send.steps_from(gate))
                if isinstance(target, Refused) or target.moved:
                    return  # answered elsewhere, or superseded by a re-ask that is a gate of its own
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # cannot check now: ask anyway, delivery re-reads agy
                log.info("gate %s: could not re-read steps before asking (%s)", gate.gate_id, exc)
            for attempt in range(ASK_AGAIN + 1):
                try:
                    answer = await self.sink.ask(gate)
                except asyncio.CancelledError:
                    if me is not None and me.cancelling() and self._asks.get(gate.gate_id) is me:
                        raise  # the harness stops
                    log.info("gate %s withdrawn from the human", gate.gate_id)
                    return
                except Exception as exc:  # the surface could not put it to the human: say so, once
                    log.warning("gate %s: the sink could not ask it (%s)", gate.gate_id, exc)
                    await self.emitter.notice(f"{gate.id}/unasked", unasked_text(gate, exc), "error")
                    return
                if self._asks.get(gate.gate_id) is me:
                    del self._asks[gate.gate_id]  # answered: the delivery no longer holds a place
                if await self.answer(gate, answer, decided_by=self._sink_decider()):
                    return
                # not delivered (a notice said why) while agy still waits for it: asked again
                again = gate.gate_id in self._open and gate.gate_id not in self._claimed
                again = again and gate.gate_id not in self._aside
                if not again or self._stopped or attempt == ASK_AGAIN:
                    return
                if len(self._asks) >= self.max_asks:
                    self._backlog[gate.gate_id] = gate
                    return
                assert me is not None
                self._asks[gate.gate_id] = me
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("gate %s: handling failed", gate.gate_id)
        finally:
            if self._asks.get(gate.gate_id) is me:
                del self._asks[gate.gate_id]
            self._refill()

    def _sink_decider(self) -> DecidedBy:
        """Who decided an answer the sink gave: its human on its surface, or, for a sink that answers
        by a policy of its own (``auto_policy``: the policy's name; the demo's ``--auto``), that policy
        (kind ``auto``): the ledger never records an automatic answer as a human's."""
        policy = str(getattr(self.sink, "auto_policy", "") or "")
        if not policy:
            return self.decisions.by(surface=self._surface)
        return self.decisions.by(kind="auto", surface=self._surface).model_copy(update={"rule_id": policy})

    @property
    def _surface(self) -> str:
        """The front end whose human answers through the sink (its ``surface``, else its class)."""
        return str(getattr(self.sink, "surface", "") or type(self.sink).__name__)
