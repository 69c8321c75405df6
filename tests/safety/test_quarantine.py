"""Finding 7 at the harness: an event a sink refuses for its content is quarantined with a notice,
not re-delivered forever (nothing after it used to reach the sink, and the cursor stopped)."""

from __future__ import annotations

from collections.abc import Sequence

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.cursor_file import MemoryCursorStore
from agy_harness.ports.events import Event, UserMessage
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on, run_turn


class PickySink(RecordingSink):
    """Refuses (as an encoder would) any event carrying the word POISON: for its content, forever."""

    def __init__(self) -> None:
        super().__init__()
        self.refusals = 0

    async def deliver(self, events: Sequence[Event]) -> int:
        for i, event in enumerate(events):
            if "POISON" in event.model_dump_json():
                if i == 0:
                    self.refusals += 1
                    raise UnicodeEncodeError("utf-8", "POISON", 0, 6, "the consumer cannot encode it")
                return await super().deliver(events[:i])
        return await super().deliver(events)


def quarantine_notices(sink: RecordingSink) -> list[Event]:
    return [e for e in sink.events if e.type == "notice" and "refused by the event sink" in e.text]  # type: ignore[union-attr]


async def test_an_event_the_sink_refuses_is_quarantined_and_the_rest_arrives(sim: Simulator) -> None:
    sink, store = PickySink(), MemoryCursorStore()
    async with harness_on(sim, sink, cursor_store=store) as session:
        await session.send("Say hello, POISON.")
        await sink.wait_for(lambda: bool(quarantine_notices(sink)), 15)
        await sink.wait_for(lambda: any(e.type == "status" and e.status == "idle" for e in sink.events), 15)  # type: ignore[union-attr]
        await run_turn(session, sink, "Say hello in one short sentence.")  # later turns still arrive
        assert session.harness.stats.quarantined
    quarantined = quarantine_notices(sink)[0]
    assert "POISON" not in quarantined.model_dump_json()
    users = [e.text for e in sink.events if isinstance(e, UserMessage)]
    assert users == ["Say hello in one short sentence."]
    assert sink.refusals <= 4  # refused a bounded number of times, not forever
    assert store.saves > 0
