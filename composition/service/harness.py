"""The harness for one agy conversation: its roles, started, stopped and moved together.

Built only on ports, so every adapter (RPC stream, RPC poll, transcript tail; RPC or tmux turn-send;
any event sink) plugs in. :func:`agy_harness.composition.root.session.open_session` builds one from a
running agy (or the simulator) through the version gate.

One job per role, each in its own module, sharing the bound :class:`Conversation`, one clock and one
bus (:mod:`.bus`: what the emitter delivered, which the other roles subscribe to when they are built):

* :class:`~.read_driver.ReadDriver` — picks the step source (stream, then poll, then tail), falls back
  and returns, demotes a source agy cannot serve, supervises itself.
* :class:`~.emitter.Emitter` — feeds steps through the reconciler, delivers events to the sink in
  order, advances the cursor past what the sink acknowledged, publishes what was delivered.
* :class:`~.gate_bridge.GateBridge` — puts gates to the human (each in its own ask), withdraws them, delivers
  answers (re-target a stale step, report a shape error, retry a transport failure).
* :class:`~.directory_watcher.DirectoryWatcher` — lists agy's cascades: the run-status backstop, and
  the listing for the sub-agent mirrors (:mod:`.subagents`) and the ``/clear`` rule (:mod:`.clear_follower`).
* :class:`~.turn_control.TurnControl` — user turns (with turn-sender demotion) and interrupt.

:class:`Harness` is the facade: it builds the roles from the ports it is given (the composition root
gives them all; nothing is wired in after), runs their tasks, and does the one thing that moves them
all, :meth:`Harness.rotate`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import GateOpened, Rotation
from agy_harness.ports.policy import GatePolicy
from agy_harness.ports.protocols import (
    CascadeDirectory,
    Claims,
    CursorStore,
    DecidedBy,
    DecisionLedger,
    EventSink,
    GateAnswer,
    InteractionDelivery,
    Interrupter,
    SessionClock,
    StepSnapshot,
    StepSource,
    TuiKeys,
    TuiScreen,
    TurnSender,
)
from agy_harness.ports.tasks import reap

from .bus import SessionBus
from .clock import LoopClock
from .conversation import Conversation, HarnessOptions, HarnessStats
from .directory_watcher import DirectoryWatcher
from .emitter import Emitter
from .gate_bridge import GateBridge
from .read_driver import ReadDriver
from .turn_control import InterruptReport, TurnControl

__all__ = ["Harness", "HarnessOptions", "HarnessStats", "InterruptReport"]

log = logging.getLogger("agy_harness.harness")


class Harness:
    """The roles of one session, built from the ports given (see the module doc).

    ``claims``: the other sessions' conversations (None: this session claims nothing and knows of no
    other); ``subagent_source``: a live source for a sub-agent (None: they are polled);
    ``conversation``: the bound conversation when the caller built it (the composition root does: the
    stream's idle watchdog reads it), else built here from ``cascade_id`` and ``cursor_store``.
    """

    def __init__(
        self,
        *,
        cascade_id: str,
        sources: Sequence[StepSource],
        snapshot: StepSnapshot,
        sink: EventSink,
        delivery: InteractionDelivery | None = None,
        turn_senders: Sequence[TurnSender] = (),
        interrupter: Interrupter | None = None,
        directory: CascadeDirectory | None = None,
        cursor_store: CursorStore | None = None,
        options: HarnessOptions | None = None,
        tui: TuiKeys | None = None,
        claims: Claims | None = None,
        screen: TuiScreen | None = None,
        clock: SessionClock | None = None,
        bus: SessionBus | None = None,
        subagent_source: Callable[[], StepSource] | None = None,
        conversation: Conversation | None = None,
        ledger: DecisionLedger | None = None,
        policy: GatePolicy | None = None,
    ) -> None:
        self.ledger = ledger  # the decision ledger (issue 36): every gate decision is recorded
        if not sources:
            raise ValueError("a harness needs at least one step source")
        self.snapshot = snapshot
        self.sink = sink
        self.cursor_store = cursor_store
        self.options = options or HarnessOptions()
        self.stats = HarnessStats()
        self.clock = clock if clock is not None else LoopClock()
        self.bus = bus if bus is not None else SessionBus()
        self.claims = claims
        self.policy = policy
        self.conversation = conversation or Conversation(cascade_id, cursor_store)
        if self.conversation.cascade_id != cascade_id:
            raise ValueError(f"the conversation is bound to {self.conversation.cascade_id}, not {cascade_id}")
        self.emitter = Emitter(
            self.conversation,
            snapshot=snapshot,
            sink=sink,
            cursor_store=cursor_store,
            stats=self.stats,
            bus=self.bus,
            options=self.options,
            clock=self.clock,
        )
        self.reader = ReadDriver(
            self.conversation, sources, self.emitter, stats=self.stats, options=self.options, clock=self.clock
        )
        self._build_roles(
            directory=directory,
            screen=screen,
            subagent_source=subagent_source,
            delivery=delivery,
            tui=tui,
            turn_senders=turn_senders,
            interrupter=interrupter,
        )

    def _build_roles(
        self,
        *,
        directory: CascadeDirectory | None,
        screen: TuiScreen | None,
        subagent_source: Callable[[], StepSource] | None,
        delivery: InteractionDelivery | None,
        tui: TuiKeys | None,
        turn_senders: Sequence[TurnSender],
        interrupter: Interrupter | None,
    ) -> None:
        """The roles after the emitter (each subscribes to its bus as it is built)."""
        shared: dict[str, Any] = {"options": self.options, "clock": self.clock}
        self.watcher = DirectoryWatcher(
            self.conversation,
            snapshot=self.snapshot,
            emitter=self.emitter,
            rotate=self.rotate,
            directory=directory,
            claims=self.claims,
            screen=screen,
            subagent_source=subagent_source,
            **shared,
        )
        self.gates = GateBridge(
            snapshot=self.snapshot, sink=self.sink, emitter=self.emitter, delivery=delivery, tui=tui,
            ledger=self.ledger, policy=self.policy, **shared,
        )  # fmt: skip
        self.turns = TurnControl(
            self.conversation,
            gates=self.gates,
            emitter=self.emitter,
            turn_senders=turn_senders,
            interrupter=interrupter,
            stats=self.stats,
            snapshot=self.snapshot,
        )

    # -- the adapters, as the roles hold them ----------------------------------------------

    @property
    def cascade_id(self) -> str:
        return self.conversation.cascade_id

    @property
    def reconciler(self) -> Reconciler:
        return self.conversation.reconciler

    @property
    def sources(self) -> list[StepSource]:
        return self.reader.sources

    @property
    def turn_senders(self) -> list[TurnSender]:
        return self.turns.turn_senders

    @property
    def delivery(self) -> InteractionDelivery | None:
        return self.gates.delivery

    @delivery.setter
    def delivery(self, value: InteractionDelivery | None) -> None:
        self.gates.delivery = value

    @property
    def directory(self) -> CascadeDirectory | None:
        return self.watcher.directory

    @directory.setter
    def directory(self, value: CascadeDirectory | None) -> None:
        self.watcher.directory = value

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        self._claim(self.cascade_id)  # other sessions never take it for their /clear
        await self._tell_damage()
        await self.gates.tell_policy(self.cascade_id)
        await self.watcher.bind()
        self.reader.start()
        self.gates.start()
        self.watcher.start()

    async def stop(self) -> None:
        tasks: list[asyncio.Task[Any]] = [
            t for t in (self.reader.task, *self.gates.stop(), *self.watcher.tasks()) if t is not None
        ]
        for task in tasks:
            task.cancel()
        await reap(*tasks)
        if self.emitter.inflight:  # let committed events finish reaching the sink
            await asyncio.wait(self.emitter.inflight, timeout=2.0)
        await self.gates.decisions.drain()  # the ledger's follow-up records

    async def __aenter__(self) -> Harness:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- the public operations -------------------------------------------------------------

    @property
    def parked_gate(self) -> GateOpened | None:
        """The gate currently put to the human, if any."""
        return self.gates.parked_gate

    async def answer(self, gate: GateOpened, answer: GateAnswer, *, decided_by: DecidedBy | None = None) -> bool:
        """Deliver ``answer`` to ``gate``: re-read, pick the freshest WAITING step, tell stale from shape.
        ``decided_by``: who decided, for the decision ledger (default: a human through the API)."""
        return await self.gates.answer(gate, answer, decided_by=decided_by)

    async def send(self, text: str) -> str:
        """Start a user turn; returns the name of the turn sender that served it."""
        return await self.turns.send(text)

    async def interrupt(self) -> InterruptReport:
        """Cancel the running steps; a parked gate is denied too (agy's cancel does not free it)."""
        return await self.turns.interrupt()

    async def rotate(self, new_cascade: str) -> None:
        """Follow agy's ``/clear`` to ``new_cascade``: every role moves with the conversation."""
        old = self.cascade_id
        log.info("rotation: %s -> %s", old, new_cascade)
        event = Rotation(
            id=f"{old}/rotation/{new_cascade}", cascade_id=old, old_cascade_id=old, new_cascade_id=new_cascade
        )
        self.gates.withdraw_all()
        await self.emitter.emit([event])
        self.watcher.left(old)
        self._claim(new_cascade)
        self.conversation.rebind(new_cascade)
        await self._tell_damage()
        await self.reader.restart()

    def _claim(self, cascade_id: str) -> None:
        if self.claims is not None:
            self.claims.claim(cascade_id)

    async def _tell_damage(self) -> None:
        """A cursor that could not be used was set aside: say so, and what the session repeats."""
        texts, self.conversation.damage_notices = self.conversation.damage_notices, []
        for text in texts:
            digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]
            await self.emitter.notice(f"{self.cascade_id}/cursor-damaged/{digest}", text, "warning")
