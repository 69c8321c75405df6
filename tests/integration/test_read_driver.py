"""Issue 4's bar: live deltas then one committed message, and every fault ends like a clean run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from agy_harness.adapters.simulator import Simulator
from tests.fakes import RecordingSink

from .helpers import assert_exactly_once, committed, harness_on, run_turn, signature, texts_by_message

STORY = "Write a long story about a lighthouse keeper."
PACE = 0.15  # ~15 ms a chunk: a fault lands mid-reply


async def conversation(
    fault: Callable[[Simulator, RecordingSink], Awaitable[None]] | None = None,
) -> tuple[RecordingSink, str]:
    async with Simulator(pace=PACE) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            await run_turn(session, sink, "Say hello in one short sentence.")
            if fault is None:
                await run_turn(session, sink, STORY)
            else:
                start = len(sink.events)
                send = asyncio.create_task(run_turn(session, sink, STORY, timeout=30))
                await sink.wait_for(lambda: sum(e.type == "text_delta" for e in sink.events[start:]) >= 3)
                await fault(sim, sink)
                await send
            # the driver is back on the stream afterwards
            await sink.wait_for(lambda: session.harness.stats.current_source == "stream", timeout=10)
            return sink, session.harness.stats.current_source


@pytest.fixture(scope="module")
def clean() -> list[str]:
    sink, _ = asyncio.run(conversation())
    return signature(sink.events)


async def test_a_streamed_reply_arrives_as_deltas_then_one_committed_message(clean: list[str]) -> None:
    sink, source = await conversation()
    assert signature(sink.events) == clean and source == "stream"
    messages = [e for e in sink.events if e.type == "assistant_message"]
    assert len(messages) == 2
    streamed = texts_by_message(sink.events)
    story = messages[1]
    assert streamed[story.message_id] == story.text  # type: ignore[union-attr]
    deltas = [e for e in sink.events if e.type == "text_delta" and e.message_id == story.message_id]  # type: ignore[union-attr]
    assert len(deltas) > 10 and deltas[-1].final and not any(d.final for d in deltas[:-1])  # type: ignore[union-attr]
    assert sink.events.index(deltas[-1]) < sink.events.index(story)
    assert_exactly_once(sink.events)


async def cut(sim: Simulator, sink: RecordingSink) -> None:
    sim.faults.cut_stream_once = True


async def malformed(sim: Simulator, sink: RecordingSink) -> None:
    sim.faults.malformed_frame_once = True
    sim.faults.non_dict_step_once = True


async def burst_503(sim: Simulator, sink: RecordingSink) -> None:
    sim.faults.fail("GetCascadeTrajectorySteps", status=503, times=3)
    sim.faults.fail("StreamAgentStateUpdates", status=503, times=3)
    sim.faults.cut_stream_once = True  # so the stream has to be re-opened into the burst


async def stall(sim: Simulator, sink: RecordingSink) -> None:
    sim.faults.stall_stream = True  # silent: no frames, no trailer; the idle watchdog must notice
    n = len(sink.events)
    await sink.wait_for(lambda: len(sink.events) > n + 3, timeout=10)  # the poll carries on meanwhile
    sim.faults.stall_stream = False


async def restart(sim: Simulator, sink: RecordingSink) -> None:
    await sim.restart()  # agy restarted on a new port; discovery must find it again


@pytest.mark.parametrize("fault", [cut, malformed, burst_503, stall, restart], ids=lambda f: f.__name__)
async def test_faults_end_with_the_same_committed_events(
    clean: list[str], fault: Callable[[Simulator, RecordingSink], Awaitable[None]]
) -> None:
    sink, source = await conversation(fault)
    assert signature(sink.events) == clean  # none lost, none duplicated
    assert_exactly_once(sink.events)
    assert source == "stream"
    story = [e for e in committed(sink.events) if e.type == "assistant_message"][1]
    assert texts_by_message(sink.events)[story.message_id] == story.text  # type: ignore[union-attr]
