"""The plugin session's event sink: events onto a queue during an omnigent turn (to ``on_outside``
between turns); gates put to the current turn's asker, else to the mirror's (between omnigent's
turns), parked until one can ask. Plain Python (no
omnigent import): it is held to the sink contract in the test environment too."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer

#: asks the human through the current omnigent turn; None when no turn can ask (wait for the next)
GateAsker = Callable[[GateOpened], Awaitable[GateAnswer | None]]


class CardAsker(Protocol):
    """A :data:`GateAsker` that can also show the card with a note saying why it is shown again."""

    def __call__(self, gate: GateOpened, *, note: str = "") -> Awaitable[GateAnswer | None]: ...


class PluginSink:
    """The session's sink: events onto a queue; gates to the current turn's asker, else (between
    omnigent's turns) to ``between`` (the mirror parks them in the omnigent session), else parked
    until a turn can ask."""

    surface = "omnigent"  # where its human decides (the decision ledger)

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        #: between omnigent's turns events go to ``on_outside`` as they arrive; during one, onto the queue
        self.to_queue = True
        self.on_outside: Callable[[Event], None] | None = None
        self._asker: GateAsker | None = None
        self._between: GateAsker | None = None
        self._ready = asyncio.Event()
        self._asks = PendingAsks()

    def set_asker(self, asker: GateAsker | None) -> None:
        self._asker = asker
        self._changed()

    def set_between(self, asker: GateAsker | None) -> None:
        self._between = asker
        self._changed()

    def _changed(self) -> None:
        if self._asker is None and self._between is None:
            self._ready.clear()
        else:
            self._ready.set()

    async def deliver(self, events: Sequence[Event]) -> int:
        for event in events:
            if self.to_queue or self.on_outside is None:
                self.queue.put_nowait(event)
            else:
                self.on_outside(event)
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return await self._asks.run(gate.gate_id, self._ask(gate), f"plugin-ask-{gate.gate_id}")

    async def _ask(self, gate: GateOpened) -> GateAnswer:
        # A gate agy raised outside an omnigent turn (a turn typed in agy's terminal) is parked in the
        # omnigent session at once where the mirror can (``between``), else it waits here for the next
        # omnigent turn; meanwhile agy's own prompt can answer it (the harness withdraws it).
        while True:
            await self._ready.wait()
            asker = self._asker or self._between
            if asker is None:
                await asyncio.sleep(0.05)
                continue
            answer = await asker(gate)
            if answer is not None:
                return answer
            if asker is self._between:
                self._between = None  # omnigent refused the hook: turns ask from now on
                self._changed()
            await asyncio.sleep(0.05)  # the turn ended under the question: wait for the next one

    async def withdraw(self, gate_id: str) -> None:
        self._asks.cancel(gate_id)  # withdraw alone ends the ask (the sink contract)
