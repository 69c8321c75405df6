"""Issue #35 case 5: two conversation-list answers saying IDLE -- stale ones, from before the turn
began, delayed by the network -- closed the turn although the snapshot just read held a WAITING step.
Every front end took that as the end (the ACP prompt returned with its permission open, the board
moved the row out of "needs you", the omnigent run ended).

Now the run-status backstop never ends a turn with an open gate or an unsettled step, and a listing
older than the turn's start closes nothing. On the simulator, whose listing answers are replayed
from before the turn, late (``sim.faults.replay_listing``), through the public API."""

from __future__ import annotations

import asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.ports.events import StatusChanged
from tests.binding.helpers import WAIT, watched

LISTING = "GetAllCascadeTrajectories"


async def test_stale_idle_listings_never_end_a_turn_whose_gate_waits(sim: Simulator) -> None:
    before = {"trajectorySummaries": sim.trajectory_summaries()}  # agy idle, before the turn
    async with watched(sim) as w:
        await w.session.send("run `rm -rf build`")
        gate = await w.gate("rm -rf build")
        mark = len(w.events)
        sim.faults.replay_listing(before, times=6, delay=0.2)  # 6 IDLE answers from before the turn
        async with asyncio.timeout(WAIT):
            while sim.faults.stale_listings:
                await asyncio.sleep(0.02)
            asked = sim.calls.count(LISTING)
            while sim.calls.count(LISTING) <= asked:  # the last stale answer was read and acted on
                await asyncio.sleep(0.02)
        assert sim.faults.fired.count("stale_listing") == 6
        ended = [e for e in w.events[mark:] if isinstance(e, StatusChanged) and e.status == "idle"]
        assert ended == [], "the backstop ended a turn whose gate still waits"
        assert w.session.sink.pending_gate(gate.gate_id) is not None  # type: ignore[attr-defined]
        await w.session.answer(gate.gate_id, True)  # the human still answers it; the turn ends after
        await w.idle(after=mark)
    assert [command for command, _ in sim.executed] == ["rm -rf build"]
