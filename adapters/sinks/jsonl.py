"""The JSON-lines event sink: each event as one line of ``event.model_dump(mode="json")``.

For pipes and scripts (``agy-harness ... | jq``). Gates are answered by ``answer`` when given (a plain
or async callable); without it a gate is left to someone else (agy's own TUI): :meth:`JsonlSink.ask`
waits until the harness withdraws the gate. A gate's ``gate_opened`` line is printed either way.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TextIO

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.ports.events import Event, GateOpened, event_to_json
from agy_harness.ports.protocols import GateAnswer

Answerer = Callable[[GateOpened], GateAnswer | Awaitable[GateAnswer]]


class JsonlSink:
    """An :class:`~agy_harness.ports.protocols.EventSink` writing JSON lines to ``stream`` (stdout)."""

    def __init__(self, stream: TextIO | None = None, *, answer: Answerer | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.answer = answer
        self._asks = PendingAsks()

    async def deliver(self, events: Sequence[Event]) -> int:
        for event in events:
            self.stream.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
        self.stream.flush()
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return await self._asks.run(gate.gate_id, self._ask(gate), f"jsonl-ask-{gate.gate_id}")

    async def _ask(self, gate: GateOpened) -> GateAnswer:
        if self.answer is None:
            # someone else answers (agy's TUI); wait until the harness withdraws the gate
            await asyncio.get_running_loop().create_future()
        assert self.answer is not None
        result = self.answer(gate)
        if inspect.isawaitable(result):
            return await result
        return result

    async def withdraw(self, gate_id: str) -> None:
        self._asks.cancel(gate_id)
