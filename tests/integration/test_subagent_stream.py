"""Sub-agents are streamed again (issue #14): each stream has its own connection, so a child's stream
can neither stall the session's own nor hold up a call."""

from __future__ import annotations

import asyncio

from agy_harness.adapters.simulator import Simulator
from tests.fakes import RecordingSink

from .helpers import harness_on, run_turn


async def test_a_sub_agent_is_streamed_and_the_session_keeps_working(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        await run_turn(session, sink, "start a subagent to review the code")
        # the child is linked when agy's listing shows it, which may come after the parent's turn ended
        await sink.wait_for(lambda: any(e.type == "subagent" for e in sink.events), timeout=10)
        [link] = [e for e in sink.events if e.type == "subagent"]
        child = link.child_cascade_id  # type: ignore[attr-defined]
        await sink.wait_for(
            lambda: any(e.type == "assistant_message" and e.cascade_id == child for e in sink.events),
            timeout=10,
        )
        assert "subagent" not in session.harness.stats.batches  # no poll batches: the child was streamed
        assert len(sim._cascades[child].watchers) == 1  # its stream is open at agy
        await run_turn(
            session, sink, "Say hello in one short sentence."
        )  # the session's own turn still flows
    await asyncio.sleep(0)
    assert not sim._cascades[child].watchers  # closed with the session
