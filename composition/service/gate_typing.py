"""Typing an answer into agy's own prompt (:class:`PromptTyping`, mixed into
:class:`~.gate_delivery.AnswerDelivery`): keys are typed only while agy waits on that request alone
and its pane's last prompt shows exactly that request with nothing typed; then agy's recorded answer
is read back and must be what the keys said (see :mod:`.gate_delivery`'s doc)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from agy_harness.core import steps as S
from agy_harness.core.elicitation import Refused, delivery_target
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import SessionClock, StepSnapshot, TuiKeys

from .emitter import Emitter, Level

log = logging.getLogger("agy_harness.harness")

TYPED_CONFIRM = 3.0  # how long agy may take to record an answer typed into its prompt


def as_typed(gate: GateOpened, keys: list[str], response: dict[str, Any]) -> bool:
    """agy recorded what the keys said: an allow for ``1``/``2``/``3``, a denial for ``4``; the option
    typed, or a skip for Escape."""
    if gate.kind == "permission":
        allowed = S.as_dict(response.get("permission")).get("allow") is True
        return allowed == (keys[0] in ("1", "2", "3"))
    responses = S.as_list(S.as_dict(response.get("askQuestion")).get("responses"))
    typed = [k for k in keys if k.isdigit()]
    if not typed:
        return not any(S.as_dict(r).get("selectedOptionIds") for r in responses)
    return bool(responses) and S.as_list(S.as_dict(responses[0]).get("selectedOptionIds")) == typed


class PromptTyping:
    """agy's own prompt, for :class:`~.gate_delivery.AnswerDelivery` (which holds what is named below)."""

    if TYPE_CHECKING:
        tui: TuiKeys | None
        snapshot: StepSnapshot
        emitter: Emitter
        clock: SessionClock

        async def refuse(self, gate: GateOpened, why: str, level: Level = "error") -> bool: ...

        async def steps_from(self, gate: GateOpened, index: int | None = None) -> list[Any]: ...

    async def typed(self, gate: GateOpened, keys: list[str], what: str) -> bool | None:
        """Type ``keys`` into agy's prompt for ``gate`` (see the module doc). True: typed, and agy
        recorded the answer; False: refused (reported); None: nothing typed (reported), use RPC."""
        assert self.tui is not None
        try:  # the whole conversation: "agy waits on this request alone" needs every step
            raws = await self.snapshot.read_steps(gate.cascade_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return await self._not_typed(gate, what, f"agy could not be read ({exc})")
        target = delivery_target(gate, raws)
        if isinstance(target, Refused):
            return await self.refuse(
                gate, target.detail, "error" if target.reason == "elsewhere" else "warning"
            )
        others = [
            s
            for s in map(S.parse_step, raws)
            if s is not None and s.status == "WAITING" and s.key.step_index != target.step_index
        ]
        if others:
            return await self._not_typed(gate, what, "agy waits for another request too")
        try:
            shown = await self.tui.shows_prompt(gate)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return await self._not_typed(gate, what, f"its pane could not be read ({exc})")
        if not shown:
            return await self._not_typed(
                gate, what, "its prompt does not show this request, or holds typed text"
            )
        try:
            await self.tui.send_keys(keys)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return await self._not_typed(gate, what, f"typing failed ({exc})")
        recorded = await self._recorded(gate, target.step_index)
        if recorded is not None and as_typed(gate, keys, recorded):
            return True
        if recorded is not None:  # someone answered in agy's terminal at the same moment
            await self.emitter.notice(
                gate.id,
                f"gate {gate.gate_id}: agy recorded another answer than the {what} typed "
                "(it was answered in agy's terminal meanwhile)",
                "error",
            )
            return False
        await self.emitter.notice(
            gate.id,
            f"gate {gate.gate_id}: agy did not record the {what} typed into its prompt within "
            f"{TYPED_CONFIRM:g}s",
            "warning",
        )
        return None

    async def _not_typed(self, gate: GateOpened, what: str, why: str) -> bool | None:
        log.info("gate %s: typed nothing into agy's pane for %s: %s", gate.gate_id, what, why)
        await self.emitter.notice(gate.id, f"typed nothing into agy's pane for the {what}: {why}", "warning")
        return None

    async def _recorded(self, gate: GateOpened, step_index: int) -> dict[str, Any] | None:
        """The answer agy recorded for the step, once it left WAITING (None: none within the time)."""
        end = self.clock.monotonic() + TYPED_CONFIRM
        while self.clock.monotonic() < end:
            await self.clock.sleep(0.05)
            try:
                raws = await self.steps_from(gate, step_index)
            except asyncio.CancelledError:
                raise
            except Exception:
                continue
            for step in map(S.parse_step, raws):
                if (
                    step is not None
                    and step.key.trajectory_id == gate.trajectory_id
                    and step.key.step_index == step_index
                    and step.status != "WAITING"
                ):
                    return S.interaction_response(step)
        return None
