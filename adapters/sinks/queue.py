"""The default sink of ``open_session``: events on an asyncio queue, gates answered through the API
(``Session.answer`` resolves the pending ask).

One exception to "in order" (issue #35, case 8): a card of the newest turn (a gate whose ``turn`` is
the newest user message's executionId) is never queued behind unread cards of other turns; those,
with every unread event of their steps, move to just after it. A reader who takes cards one at a
time then meets agy's request of the turn it runs before a flood of gates that no turn waits on
(each still comes, in its order, right after). Nothing is dropped, nothing else changes order; a
gate or user message without an executionId moves nothing and is never moved.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence

from agy_harness.core.steps import turn_of_user_key
from agy_harness.ports.events import Event, GateOpened, UserMessage
from agy_harness.ports.protocols import GateAnswer


class CardQueue(asyncio.Queue[Event]):
    """An unbounded event queue that puts the newest turn's cards in front of other turns' unread ones
    (``asyncio.Queue``'s ``_put`` hook, as ``PriorityQueue`` uses it)."""

    _queue: deque[Event]

    def _init(self, maxsize: int) -> None:
        self._queue = deque()
        self.turn = ""  # the newest user message's executionId
        self.deferred = 0  # cards moved behind a newer turn's card (for the logs and tests)

    def _put(self, item: Event) -> None:
        if isinstance(item, UserMessage):
            self.turn = turn_of_user_key(item.step_key)  # a turn without an id: none is known
        elif isinstance(item, GateOpened) and item.answerable and item.turn and item.turn == self.turn:
            others = {
                e.step_key
                for e in self._queue
                if isinstance(e, GateOpened) and e.answerable and e.turn and e.turn != self.turn and e.step_key
            }
            if others:
                moved = [e for e in self._queue if e.step_key in others]
                kept = [e for e in self._queue if e.step_key not in others]
                self._queue = deque([*kept, item, *moved])
                self.deferred += len(others)
                return
        self._queue.append(item)


class QueueSink:
    """The default sink of :func:`open_session`: events on a queue, gates answered by ``Session.answer``."""

    delivers_at_once = True  # deliver never waits (an unbounded queue): see EventSink

    def __init__(self) -> None:
        self.queue: CardQueue = CardQueue()
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
