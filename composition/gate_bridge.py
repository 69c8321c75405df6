"""The gate bridge: gates agy opened, put to the human one at a time, and the answers delivered.

Gates arrive from the :class:`~.emitter.Emitter` (observer), are queued, and re-checked against agy
before asking (answered elsewhere or superseded: not asked). A gate withdrawn while asked cancels the
ask. :meth:`GateBridge.answer` re-reads agy at delivery, targets the freshest WAITING step asking the
same thing, re-targets a stale rejection, reports a shape error once, and retries transient failures
with backoff while the step waits, up to ``answer_deadline`` (an answer is never lost while agy still
waits for it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from agy_harness.core.answers import AnswerError, check_answer
from agy_harness.core.elicitation import (
    Target,
    classify_rejection,
    delivery_target,
    freshest_open,
    interaction_payload,
    rejection_is_transient,
)
from agy_harness.core.tui_keys import dismiss_keys, persist_keys, persist_offered
from agy_harness.ports.events import Event, GateOpened, GateWithdrawn
from agy_harness.ports.protocols import (
    EventSink,
    GateAnswer,
    InteractionDelivery,
    InteractionRejected,
    StepSnapshot,
    TuiKeys,
)

from .conversation import HarnessOptions
from .emitter import Emitter

log = logging.getLogger("agy_harness.harness")


class GateBridge:
    def __init__(
        self,
        *,
        snapshot: StepSnapshot,
        sink: EventSink,
        emitter: Emitter,
        delivery: InteractionDelivery | None = None,
        options: HarnessOptions | None = None,
        tui: TuiKeys | None = None,
    ) -> None:
        self.snapshot = snapshot
        #: agy's own terminal, when its pane is known: its prompt is closed after an RPC answer,
        #: and "allow always" goes there (see core.tui_keys)
        self.tui = tui
        self.sink = sink
        self.emitter = emitter
        self.delivery = delivery
        self.options = options or HarnessOptions()
        self._gates: asyncio.Queue[GateOpened] = asyncio.Queue()
        self._queued: dict[str, GateOpened] = {}
        self._current_gate: GateOpened | None = None
        self._current_ask: asyncio.Task[GateAnswer] | None = None
        self._delivered_gates: set[str] = set()
        self._worker: asyncio.Task[None] | None = None
        self._open: dict[str, GateOpened] = {}  # gates the stream shows WAITING (for a failed re-read)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._worker = asyncio.create_task(self._gate_worker(), name="agy-harness-gates")

    def tasks(self) -> list[asyncio.Task[Any]]:
        """What the harness cancels on stop: the ask in progress, then the worker."""
        return [t for t in (self._current_ask, self._worker) if t is not None]

    # -- gates in --------------------------------------------------------------------------

    def observe(self, events: Sequence[Event]) -> None:
        """Emitter observer: open what was opened, withdraw what was withdrawn, in order."""
        for event in events:
            if isinstance(event, GateOpened):
                self._open[event.gate_id] = event
                self.open(event)
            elif isinstance(event, GateWithdrawn):
                self._open.pop(event.gate_id, None)
                self.withdraw(event.gate_id)

    def open(self, gate: GateOpened) -> None:
        if not gate.answerable or gate.gate_id in self._queued or gate.gate_id in self._delivered_gates:
            return  # (a gate only agy's terminal can answer is never put to a human here)
        self._queued[gate.gate_id] = gate
        self._gates.put_nowait(gate)

    def withdraw(self, gate_id: str) -> None:
        self._queued.pop(gate_id, None)
        current = self._current_gate
        if current is not None and current.gate_id == gate_id and self._current_ask is not None:
            self._current_ask.cancel()

    def withdraw_all(self) -> None:
        """Rotation: nothing queued or asked belongs to the new conversation."""
        self._open.clear()
        for gate_id in list(self._queued):
            self.withdraw(gate_id)
        if self._current_gate is not None:
            self.withdraw(self._current_gate.gate_id)

    @property
    def parked_gate(self) -> GateOpened | None:
        """The gate currently put to the human, if any."""
        return self._current_gate

    def stop_asking(self) -> None:
        """Cancel the ask in progress (the interrupt answers the gate itself)."""
        if self._current_ask is not None:
            self._current_ask.cancel()

    # -- asking ----------------------------------------------------------------------------

    async def _gate_worker(self) -> None:
        while True:
            gate = await self._gates.get()
            if self._queued.pop(gate.gate_id, None) is None:
                continue  # withdrawn while queued
            try:
                await self._handle_gate(gate)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("gate %s: handling failed", gate.gate_id)
            finally:
                self._current_gate, self._current_ask = None, None

    async def _handle_gate(self, gate: GateOpened) -> None:
        try:
            target = delivery_target(gate, await self.snapshot.read_steps(gate.cascade_id))
            if target is None or target.moved:
                return  # answered elsewhere, or superseded by a retry that is queued as its own gate
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # cannot check now: ask anyway, delivery re-reads agy
            log.info("gate %s: could not re-read steps before asking (%s)", gate.gate_id, exc)
        self._current_gate = gate
        self._current_ask = asyncio.ensure_future(self.sink.ask(gate))
        try:
            answer = await self._current_ask
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                raise
            log.info("gate %s withdrawn from the human", gate.gate_id)
            return
        await self.answer(gate, answer)

    # -- delivering ------------------------------------------------------------------------

    async def answer(self, gate: GateOpened, answer: GateAnswer, *, deadline: float | None = None) -> bool:
        """Deliver ``answer`` to ``gate``; True once agy took it. Never loses it while agy waits.

        The answer is checked first (an ambiguous one is refused with a notice, never sent). Then,
        until ``deadline`` seconds (default ``options.answer_deadline``) have passed: re-read agy,
        target the freshest WAITING step asking the same thing (if the re-read fails: the freshest
        one the stream still shows open), deliver. Transient failures (agy unreachable, timeouts,
        5xx other than "input not registered", a failed re-read) are retried with backoff; a stale
        step is re-targeted; only a proven shape error, or a step that left WAITING, is final.
        """
        if self.delivery is None:
            await self.emitter.notice(
                gate.id, "this harness cannot deliver answers (no interaction adapter)", "error"
            )
            return False
        try:
            check_answer(gate, answer)
        except AnswerError as exc:
            await self.emitter.notice(
                gate.id, f"gate {gate.gate_id}: answer refused, nothing sent: {exc}", "error"
            )
            return False
        if answer.persist is not None:
            return await self._persist(gate, answer)
        delivered = await self._deliver(gate, answer, deadline)
        if delivered and self.tui is not None:
            await self._type(gate, dismiss_keys(gate, answer), "close agy's prompt")
        return delivered

    async def _persist(self, gate: GateOpened, answer: GateAnswer) -> bool:
        """ "Allow always": typed into agy's own menu, which records the rule and answers the step (the
        RPC carries only allow). Refused, nothing sent, where that is not possible."""
        keys = persist_keys(gate, answer)
        why = ""
        if keys is None or gate.kind != "permission":
            why = "allow always applies only to allowing a permission"
        elif not persist_offered(gate):
            why = "agy offers no allow-always for this gate"
        elif self.tui is None:
            why = "allow always needs agy's pane (attach --tmux): only agy's own menu records the rule"
        if why or keys is None:
            await self.emitter.notice(
                gate.id, f"gate {gate.gate_id}: answer refused, nothing sent: {why}", "error"
            )
            return False
        if await self._target(gate) is None:
            return False
        ok = await self._type(gate, keys, "allow always")
        if ok:
            self._delivered_gates.add(gate.gate_id)
        return ok

    async def _type(self, gate: GateOpened, keys: list[str], what: str) -> bool:
        if not keys or self.tui is None:
            return False
        try:
            await self.tui.send_keys(keys)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # best effort for a dismissal; the answer itself is reported
            log.warning("gate %s: could not type %s into agy's pane to %s: %s", gate.gate_id, keys, what, exc)
            if what == "allow always":
                await self.emitter.notice(
                    gate.id,
                    f"gate {gate.gate_id}: could not type into agy's pane ({exc}); not delivered",
                    "error",
                )
            return False
        return True

    async def _deliver(self, gate: GateOpened, answer: GateAnswer, deadline: float | None) -> bool:
        loop = asyncio.get_running_loop()
        limit = self.options.answer_deadline if deadline is None else deadline
        end = loop.time() + limit
        pause = self.options.fallback_backoff
        attempts = 0
        while True:
            attempts += 1
            try:
                outcome = await self._deliver_once(gate, answer)
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
            if loop.time() + pause > end:
                await self.emitter.notice(
                    gate.id,
                    f"gate {gate.gate_id}: agy did not take the answer within {limit:g}s ({attempts} attempts);"
                    " it was not delivered, answer again to retry",
                    "error",
                )
                return False
            await asyncio.sleep(pause)
            pause = min(pause * 2, self.options.max_backoff)

    async def _target(self, gate: GateOpened) -> Target | None:
        """Where the answer goes now; raises when agy cannot be read and the stream shows no open gate."""
        try:
            raws = await self.snapshot.read_steps(gate.cascade_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            target = freshest_open(gate, list(self._open.values()))
            if target is None:
                raise
            log.info(
                "gate %s: re-read failed (%s); delivering to step %d, the freshest the stream shows waiting",
                gate.gate_id,
                exc,
                target.step_index,
            )
            return target
        target = delivery_target(gate, raws)
        if target is None:
            await self.emitter.notice(
                gate.id,
                f"gate {gate.gate_id} was answered elsewhere or is gone; the answer was not delivered",
                "warning",
            )
        return target

    async def _deliver_once(self, gate: GateOpened, answer: GateAnswer) -> bool | None:
        """One delivery attempt: True delivered, False final (reported), None try again."""
        assert self.delivery is not None
        target = await self._target(gate)
        if target is None:
            return False
        try:
            await self.delivery.deliver(gate.cascade_id, interaction_payload(gate, answer, target.step_index))
        except InteractionRejected as exc:
            if rejection_is_transient(exc.status, exc.code, exc.message):
                log.warning(
                    "gate %s: agy failed transiently (HTTP %s %s: %s)",
                    gate.gate_id,
                    exc.status,
                    exc.code,
                    exc.message,
                )
                return None
            kind = classify_rejection(
                gate, target.step_index, await self.snapshot.read_steps(gate.cascade_id)
            )  # a failed re-read here is transient too: the caller retries
            if kind == "stale":
                log.info(
                    "gate %s: step %d went stale (%s); re-targeting",
                    gate.gate_id,
                    target.step_index,
                    exc.message,
                )
                return None
            if kind == "shape":
                await self.emitter.notice(
                    gate.id,
                    f"agy refused the answer to gate {gate.gate_id} (HTTP {exc.status}: {exc.message}); "
                    "not retrying",
                    "error",
                )
            else:
                await self.emitter.notice(
                    gate.id, f"gate {gate.gate_id} is gone; the answer was not delivered", "warning"
                )
            return False
        self._delivered_gates.add(gate.gate_id)
        if target.moved:
            log.info(
                "gate %s timed out meanwhile; delivered to agy's retry at step %d",
                gate.gate_id,
                target.step_index,
            )
        return True
