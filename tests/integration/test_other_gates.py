"""A gate of a kind this harness cannot answer (agy >= 1.1.0's file-write review; the simulator's
``write the file`` scenario, a guessed shape): announced as a gate of kind ``other`` with a notice to
answer in agy's terminal, never answered by the harness, withdrawn when agy moves on."""

from __future__ import annotations

import asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.ports.events import GateOpened, GateWithdrawn, Notice
from tests.fakes import RecordingSink

from .helpers import harness_on, turn_over


async def test_a_file_review_gate_is_announced_answered_in_agys_terminal_and_withdrawn(
    sim: Simulator,
) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        await session.send("write the file notes.md")
        await sink.wait_for(lambda: any(isinstance(e, GateOpened) for e in sink.events), 15)
        [gate] = [e for e in sink.events if isinstance(e, GateOpened)]
        assert gate.kind == "other" and not gate.answerable and gate.interaction == "fileReview"
        assert gate.request["targetFileUri"].endswith("/notes.md") and gate.tool_name == "write_to_file"
        notices = [e for e in sink.events if isinstance(e, Notice)]
        # in words (issue 45): what agy would touch, never agy's raw field name
        assert any("answer in agy's terminal" in n.text and "notes.md" in n.text for n in notices)
        assert not any("fileReview" in n.text for n in notices)
        await asyncio.sleep(0.3)
        assert sink.asked == []  # nobody is asked: the harness cannot answer it
        assert "HandleCascadeUserInteraction" not in sim.calls
        index = await sim.resolve_in_terminal()
        assert index == gate.step_index
        await sink.wait_for(turn_over(sink, 0), 15)
    [withdrawn] = [e for e in sink.events if isinstance(e, GateWithdrawn)]
    assert withdrawn.gate_id == gate.gate_id and withdrawn.reason == "answered"
    assert [e.text for e in sink.events if e.type == "assistant_message"][-1] == "I wrote notes.md."  # type: ignore[union-attr]
