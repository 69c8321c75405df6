"""A real gate cannot be hidden or starved (issue #26, case 7), through the public API.

* a finished step of ANOTHER trajectory with the same step index never hides agy's own later step;
* a flood of gates nobody answers never keeps a real one from the human: the newest request is put to
  the human at once (a sink shows a bounded number of asks; the oldest give way to the newest).
"""

from __future__ import annotations

import asyncio
import os

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates, foreign_done_steps
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer
from agy_harness.ports.tasks import reap
from tests.fakes import RecordingSink

from .helpers import FAST, watched


async def test_a_finished_step_of_another_trajectory_never_hides_a_gate(sim: Simulator) -> None:
    async with watched(sim) as w:
        await w.session.send("Say hello in one short sentence.")
        await w.idle()
        base = len(sim.steps())
        # 8 finished steps of another trajectory, claiming the indices agy's next steps will get
        foreign_done_steps(sim, list(range(base + 8, base + 16)))
        await w.session.send("run `rm -rf build`")
        gate = await w.gate("rm -rf build")
        assert base + 8 <= gate.step_index < base + 16  # it collided, and was seen all the same
        await w.session.answer(gate.gate_id, False)
        await w.idle(after=w.events.index(gate))
    assert sim.executed == []


class OnlyTheReal(RecordingSink):
    """A human who answers the real request and never the bogus ones (which stay asked)."""

    def __init__(self, real: str) -> None:
        super().__init__()
        self.real = real

    async def ask(self, gate: GateOpened) -> GateAnswer:
        self.asked.append(gate)
        if gate.permission is not None and gate.permission.command_line == self.real:
            return GateAnswer(allow=True)
        await asyncio.Event().wait()  # never answered
        raise AssertionError("unreachable")


async def test_a_flood_of_gates_never_keeps_the_real_one_from_the_human(sim: Simulator) -> None:
    sink = OnlyTheReal("touch real")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        flood_gates(sim, 30)
        await sink.wait_for(lambda: len(sink.asked) >= 1, 10)
        await s.send("run `touch real`")
        await sink.wait_for(lambda: ("touch real", sim.workspace) in sim.executed, 10)
        real = [
            g for g in sink.asked if g.permission is not None and g.permission.command_line == "touch real"
        ]
        assert len(real) == 1


async def test_several_waiting_gates_are_all_put_to_the_human(sim: Simulator) -> None:
    """Gates are asked concurrently: a second waiting gate does not wait for the first's answer."""
    sink = OnlyTheReal("nothing")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST):
        flood_gates(sim, 3)
        await sink.wait_for(lambda: len(sink.asked) == 3, 10)
    tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("agy-harness-ask")]
    await reap(*tasks)
    assert not tasks  # every ask ended with the session
