"""A flood of bogus gates never delays the real one (issue #35, case 8).

20 WAITING permission steps that agy refuses any answer to (:func:`flood_gates`), then a real request. A
human who answers every card, one at a time, on the JSON-lines sink: each bogus gate is put to them once;
agy's refusal sets it aside with one notice (it is not asked again, in front of the real one).
"""

from __future__ import annotations

import asyncio
import io
import os

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates
from agy_harness.adapters.sinks.jsonl import JsonlSink
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer
from tests.binding.helpers import FAST

POISON = 20


async def test_bogus_gates_are_asked_once_and_set_aside_not_queued_before_the_real_one(sim: Simulator) -> None:
    asked: list[str] = []  # the command of every card put to the human, in order
    turn = asyncio.Lock()  # one human, one card at a time

    async def human(gate: GateOpened) -> GateAnswer:
        async with turn:
            asked.append(gate.permission.command_line if gate.permission is not None else "")
            await asyncio.sleep(0)
            return GateAnswer(allow=True)

    out = io.StringIO()
    sink = JsonlSink(out, answer=human)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        flood_gates(sim, POISON)
        await s.send("run `touch real`")
        async with asyncio.timeout(30):
            while ("touch real", sim.workspace) not in sim.executed:
                await asyncio.sleep(0.02)
        before_real = asked.index("touch real")

        def aside() -> list[str]:
            lines = out.getvalue().splitlines()
            return [line for line in lines if '"notice"' in line and "set aside" in line]

        bogus = [c for c in asked if c.startswith("echo bogus-")]
        async with asyncio.timeout(30):  # agy's refusals are told
            while not aside():
                await asyncio.sleep(0.02)
        told = [line.split('"id": "')[1].split('"')[0] for line in aside()]
    # each bogus gate was put to the human once (a card that gave way to a newer one before its answer was
    # taken may be shown again: a few), never re-asked after agy refused it, in front of the real one
    assert len(bogus) <= POISON + 2, (len(bogus), len(set(bogus)))
    assert before_real <= POISON + 2
    assert len(told) == len(set(told)) <= len(set(bogus))  # one notice each, saying it is set aside
