"""The default sink of ``open_session``: events on an asyncio queue, gates answered through the API
(``Session.answer`` resolves the pending ask)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer


class QueueSink:
    """The default sink of :func:`open_session`: events on a queue, gates answered by ``Session.answer``."""

    delivers_at_once = True  # deliver never waits (an unbounded queue): see EventSink

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        self._asks: dict[str, asyncio.Future[GateAnswer]] = {}
        self._gates: dict[str, GateOpened] = {}

    async def deliver(self, events: Sequence[Event]) -> int:
        for event in events:
            self.queue.put_nowait(event)
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        future: asyncio.Future[GateAnswer] = asyncio.get_running_loop().create_future()
        self._asks[gate.gate_id] = future
        self._gates[gate.gate_id] = gate
        try:
            return await future
        finally:
            self._asks.pop(gate.gate_id, None)
            self._gates.pop(gate.gate_id, None)

    async def withdraw(self, gate_id: str) -> None:
        future = self._asks.pop(gate_id, None)
        if future is not None:
            future.cancel()

    def pending_gate(self, gate_id: str) -> GateOpened | None:
        """The gate the harness is asking about under ``gate_id`` right now, if any."""
        return self._gates.get(gate_id)

    def resolve(self, gate_id: str, answer: GateAnswer) -> bool:
        """Hand ``answer`` to the harness's pending ask for ``gate_id``; False when none is pending."""
        future = self._asks.get(gate_id)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True
