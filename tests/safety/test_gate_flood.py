"""A flood of bogus gates never delays the real one (issue #35, case 8).

20 WAITING permission steps that agy refuses any answer to (:func:`flood_gates`), then a real request. A
human who answers every card, one at a time, on the JSON-lines sink: each bogus gate is put to them once;
agy's refusal sets it aside with one notice (it is not asked again, in front of the real one).
"""

from __future__ import annotations

import asyncio
import io
import os
import re
from collections.abc import Sequence
from typing import Literal

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates
from agy_harness.adapters.sinks.jsonl import JsonlSink
from agy_harness.adapters.sinks.queue import QueueSink
from agy_harness.composition.root.session import open_session
from agy_harness.ports.errors import AgyHarnessError
from agy_harness.ports.events import GATE_SET_ASIDE, Event, GateOpened, GateWithdrawn, Notice
from agy_harness.ports.protocols import GateAnswer
from agy_harness.ports.tasks import reap
from tests.binding.helpers import FAST

POISON = 20


async def test_bogus_gates_are_asked_once_and_set_aside_not_queued_before_the_real_one(
    sim: Simulator,
) -> None:
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


# -- the queue sink (``open_session``'s default: ``Session.events()`` and ``Session.answer``) --------------


class _Counting(QueueSink):
    """The library's queue sink; notes how many steps agy was asked for (GetCascadeTrajectorySteps
    answers, and the steps they held) when the real request's card reached the queue."""

    def __init__(self, sim: Simulator) -> None:
        super().__init__()
        self.cascade = sim._cascade(None)
        self.start = (0, 0)
        self.at_real: tuple[int, int] | None = None

    def mark(self) -> None:
        self.start = (self.cascade.reads, self.cascade.steps_sent)

    async def deliver(self, events: Sequence[Event]) -> int:
        for e in events:
            if (
                isinstance(e, GateOpened)
                and e.permission is not None
                and e.permission.command_line == "touch real"
            ):
                self.at_real = (self.cascade.reads - self.start[0], self.cascade.steps_sent - self.start[1])
        return await super().deliver(events)


def _card(gate: GateOpened) -> str:
    return gate.permission.command_line if gate.permission is not None else gate.questions[0].question


@pytest.mark.parametrize("kind", ["permission", "question"])
async def test_queue_sink_a_flood_costs_the_real_gate_one_step_read_per_bogus_gate_at_most(
    sim: Simulator, kind: Literal["permission", "question"]
) -> None:
    """Nobody answers before the real card arrives: what stood between the flood and the real card
    on ``events()`` is the harness's own work. A question gate's multi-select flags come from a poll
    (the stream strips them): the flood's are read once, not once per gate, whole, under the lock every
    later event waits on (20 whole reads in front of the real card before the fix; the gate bridge's
    own check before asking is the one read per gate left)."""
    sink = _Counting(sim)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        await s.send("say hello")  # a conversation with a history
        await sim.wait_idle(timeout=30)
        seen: list[Event] = []

        async def read() -> None:
            async for event in s.events():
                seen.append(event)

        reader = asyncio.ensure_future(read())
        async with asyncio.timeout(30):
            while not any(e.type == "status" and e.status == "idle" for e in seen):  # type: ignore[union-attr]
                await asyncio.sleep(0.02)
        sink.mark()
        flood_gates(sim, POISON, kind=kind)
        await s.send("run `touch real`")
        async with asyncio.timeout(30):
            while sink.at_real is None:
                await asyncio.sleep(0.02)
        reader.cancel()
        await reap(reader)
    reads, steps = sink.at_real
    assert reads <= POISON + 3, (reads, steps)


async def test_queue_sink_a_human_answering_every_card_answers_each_bogus_gate_once(sim: Simulator) -> None:
    """The queue sink gives every event in order: a human answering each card as it comes gets each
    bogus card once (agy refuses the answer: one refused answer, one notice saying it is set aside),
    never a card again for a gate set aside, and then the real one, which runs."""
    asked: list[str] = []
    refused: list[str] = []
    opened: list[str] = []
    aside: list[str] = []
    retired: list[str] = []  # set-aside gates withdrawn from the human
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s:
        await s.send("say hello")
        await sim.wait_idle(timeout=30)

        async def human() -> None:
            async for event in s.events():
                if isinstance(event, Notice) and "set aside" in event.text:
                    aside.append(event.text)
                if isinstance(event, GateWithdrawn) and event.reason == GATE_SET_ASIDE:
                    retired.append(event.gate_id)
                if not isinstance(event, GateOpened):
                    continue
                opened.append(event.gate_id)
                asked.append(_card(event))
                try:
                    await s.answer(event.gate_id, True if event.permission is not None else "1")
                except AgyHarnessError:
                    refused.append(event.gate_id)

        reader = asyncio.ensure_future(human())
        flood_gates(sim, POISON, kind="question")
        flood_gates(sim, POISON)
        await s.send("run `touch real`")
        async with asyncio.timeout(30):
            while ("touch real", sim.workspace) not in sim.executed or len(refused) < 2 * POISON:
                await asyncio.sleep(0.02)
            while len(aside) < len(refused) or len(retired) < len(refused):
                await asyncio.sleep(0.02)
        reader.cancel()
        await reap(reader)
    bogus = [c for c in asked if "bogus-" in c]
    assert asked.index("touch real") <= 2 * POISON
    assert len(opened) == len(set(opened))  # no card twice: a gate set aside is never opened again
    assert len(bogus) == len(set(bogus)) == len(refused) == 2 * POISON  # one refused answer each
    told = [re.search(r"\(gate ([^)\s]+)\)", t).group(1) for t in aside]  # type: ignore[union-attr]
    assert sorted(told) == sorted(refused)  # one "set aside" notice per bogus gate, no repeat
    assert sorted(retired) == sorted(refused)  # and its card withdrawn, once


async def test_queue_sink_the_running_turns_card_is_not_queued_behind_unread_bogus_cards(
    sim: Simulator,
) -> None:
    """A human who takes one card at a time from ``events()``: the flood's first card is in their hands
    when agy's real request (of the turn the human just started) reaches the queue. The next card they
    read is the real one, not the 39 bogus cards still unread (before the fix: bogus-2 next, the real
    card 41st); the bogus cards still come, each once, after it. Conditions only: the human answers
    the first card once the sink took the real card."""
    real_delivered = asyncio.Event()

    class Watching(QueueSink):
        async def deliver(self, events: Sequence[Event]) -> int:
            accepted = await super().deliver(events)
            if any(isinstance(e, GateOpened) and _card(e) == "touch real" for e in events):
                real_delivered.set()
            return accepted

    asked: list[str] = []
    refused: list[str] = []
    sink = Watching()
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        await s.send("say hello")
        await sim.wait_idle(timeout=30)

        async def human() -> None:
            async for event in s.events():
                if not isinstance(event, GateOpened):
                    continue
                asked.append(_card(event))
                if len(asked) == 1:
                    await real_delivered.wait()  # the real card is queued while this one is answered
                try:
                    await s.answer(event.gate_id, True if event.permission is not None else "1")
                except AgyHarnessError:
                    refused.append(_card(event))

        reader = asyncio.ensure_future(human())
        flood_gates(sim, POISON, kind="question")
        flood_gates(sim, POISON)
        await s.send("run `touch real`")
        async with asyncio.timeout(60):
            while ("touch real", sim.workspace) not in sim.executed:
                await asyncio.sleep(0.02)
            while len(asked) < 2 * POISON + 1:  # and every bogus card still comes, after it
                await asyncio.sleep(0.02)
        reader.cancel()
        await reap(reader)
    assert asked[0] == "bogus-0?" and asked[1] == "touch real", asked[:3]
    bogus = [c for c in asked if "bogus-" in c]
    assert len(bogus) == len(set(bogus)) == 2 * POISON  # nothing dropped, none twice
    assert "touch real" not in refused
    assert sink.queue.deferred == 2 * POISON - 1  # every unread bogus card moved behind it


async def test_bogus_gates_of_no_running_turn_never_keep_an_interrupted_turn_open() -> None:
    """Three bogus approvals (other executionIds: no turn waits on them) sit in the step list when the
    human starts a turn and interrupts it. agy cancels the turn and goes idle: the turn ends on the
    public API (a status idle or failed after it started). Before: every idle signal (the stream's
    fully idle, the run-status backstop) was refused because "a gate is open" -- a bogus one -- and
    the turn never ended (the board showed the row working, an ACP prompt waited for good)."""
    async with Simulator(profile="1.0.10", gate_timeout=None, pace=0.3) as sim:
        async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s:
            seen: list[Event] = []

            async def read() -> None:
                async for event in s.events():
                    seen.append(event)

            reader = asyncio.ensure_future(read())
            await s.send("say hello")
            await sim.wait_idle(timeout=30)
            bogus = flood_gates(sim, 3)
            async with asyncio.timeout(30):  # the flood reached the reader
                while len({e.step_index for e in seen if isinstance(e, GateOpened)}) < len(bogus):
                    await asyncio.sleep(0.02)
            mark = len(seen)
            await s.send("Say hello in a long story please")

            def statuses() -> list[str]:
                return [e.status for e in seen[mark:] if e.type == "status"]  # type: ignore[union-attr]

            async with asyncio.timeout(30):
                while statuses()[-1:] != ["running"] or not sim.is_running():
                    await asyncio.sleep(0.02)
            report = await s.interrupt()
            assert report.cancelled
            async with asyncio.timeout(30):
                while statuses()[-1] == "running":
                    await asyncio.sleep(0.05)
            reader.cancel()
            await reap(reader)
        assert statuses()[-1] in ("idle", "failed")
        assert sim.executed == []  # no bogus gate was answered
