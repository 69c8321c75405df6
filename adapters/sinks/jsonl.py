"""The JSON-lines event sink: each event as one line of ``event.model_dump(mode="json")``.

For pipes and scripts (``agy-harness ... | jq``). Gates are answered by ``answer`` when given (a plain
or async callable); without it a gate is left to someone else (agy's own TUI): :meth:`JsonlSink.ask`
waits until the harness withdraws the gate. A gate's ``gate_opened`` line is printed either way.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TextIO

from pydantic_core import PydanticSerializationError

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.core.safejson import clean
from agy_harness.ports.events import Event, GateOpened, Notice, event_to_json
from agy_harness.ports.protocols import GateAnswer

log = logging.getLogger(__name__)

Answerer = Callable[[GateOpened], GateAnswer | Awaitable[GateAnswer]]


def event_line(event: Event) -> str:
    """One JSON line for ``event``; never raises on its content, so one event cannot wedge the sink.

    Text a strict encoder refuses (a lone surrogate) becomes U+FFFD, values nested too deep for the
    serializer are cut with a marker (``safejson.clean``); what still cannot be encoded is replaced
    by a ``notice`` line naming the quarantined event.
    """
    try:
        line = json.dumps(event_to_json(event), ensure_ascii=False)
        line.encode("utf-8")
        return line + "\n"
    except (ValueError, RecursionError, PydanticSerializationError):
        pass
    try:
        fields = {name: clean(getattr(event, name)) for name in type(event).model_fields}
        return json.dumps(fields, ensure_ascii=False) + "\n"
    except (ValueError, RecursionError, TypeError) as exc:
        log.error("event %s cannot be written (%s); quarantined", event.id, exc)
        notice = Notice(
            id=f"{event.id}/quarantined",
            cascade_id=event.cascade_id,
            step_key=event.step_key,
            level="error",
            text=f"event {event.id} ({event.type}) could not be encoded and was left out: {type(exc).__name__}",
        )
        return json.dumps(event_to_json(notice), ensure_ascii=True) + "\n"


class JsonlSink:
    """An :class:`~agy_harness.ports.protocols.EventSink` writing JSON lines to ``stream`` (stdout)."""

    def __init__(self, stream: TextIO | None = None, *, answer: Answerer | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.answer = answer
        self._asks = PendingAsks()

    async def deliver(self, events: Sequence[Event]) -> int:
        for event in events:
            line = event_line(event)
            try:
                self.stream.write(line)
            except UnicodeEncodeError:  # a stream that is not UTF-8 (LANG=C): JSON's own escapes
                self.stream.write(json.dumps(json.loads(line), ensure_ascii=True) + "\n")
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
