"""The read driver on its own: preference, fallback and return, demotion, supervision, rotation."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.composition.service.conversation import Conversation, HarnessOptions, HarnessStats
from agy_harness.composition.service.read_driver import ReadDriver
from agy_harness.ports.protocols import SourceUnavailable
from tests.core.fixtures import CASCADE, fixture
from tests.fakes import FakeClock, RecordingEmitter, ScriptedSource

FAST = HarnessOptions(fallback_backoff=0.01, max_backoff=0.05)
STEP = [fixture("user_input")]


async def run(driver: ReadDriver, until: object, emitter: RecordingEmitter) -> None:
    driver.start()
    try:
        await emitter.wait_for(until)
    finally:
        assert driver.task is not None
        driver.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await driver.task


def sources_of(emitter: RecordingEmitter) -> list[str]:
    return [b.source for b, _ in emitter.applied]


def test_a_driver_needs_a_source() -> None:
    with pytest.raises(ValueError):
        ReadDriver(Conversation(CASCADE), [], RecordingEmitter())  # type: ignore[arg-type]


async def test_the_preferred_source_feeds_the_bound_conversation() -> None:
    emitter = RecordingEmitter()
    stream = ScriptedSource("stream", [[STEP, STEP]])
    poll = ScriptedSource("poll", [[STEP]], live=False)
    driver = ReadDriver(Conversation(CASCADE), [stream, poll], emitter, options=FAST, clock=FakeClock())  # type: ignore[arg-type]
    await run(driver, lambda: len(emitter.applied) == 2, emitter)
    assert sources_of(emitter) == ["stream", "stream"] and poll.opened == 0
    assert {b.cascade_id for b, _ in emitter.applied} == {CASCADE}
    assert driver.stats.current_source == "stream"


async def test_a_failing_source_falls_back_for_a_while_then_returns() -> None:
    emitter, stats = RecordingEmitter(), HarnessStats()
    stream = ScriptedSource("stream", [[ConnectionError("cut")], [STEP]])
    poll = ScriptedSource("poll", [[STEP, "end"]], live=False)
    driver = ReadDriver(
        Conversation(CASCADE),
        [stream, poll],
        emitter,
        options=FAST,
        clock=FakeClock(),
        stats=stats,  # type: ignore[arg-type]
    )
    await run(driver, lambda: "stream" in sources_of(emitter), emitter)
    assert sources_of(emitter) == ["poll", "stream"]
    assert stats.source_errors == 1 and stats.demotions == [] and stats.current_source == "stream"


async def test_a_source_agy_cannot_serve_is_dropped_for_good() -> None:
    emitter, stats = RecordingEmitter(), HarnessStats()
    stream = ScriptedSource("stream", [[SourceUnavailable("404")]])
    poll = ScriptedSource("poll", [[STEP]], live=False)
    driver = ReadDriver(
        Conversation(CASCADE),
        [stream, poll],
        emitter,
        options=FAST,
        clock=FakeClock(),
        stats=stats,  # type: ignore[arg-type]
    )
    await run(driver, lambda: emitter.applied, emitter)
    assert [s.name for s in driver.sources] == ["poll"] and stats.demotions == ["stream"]


async def test_with_no_source_left_it_says_so_and_stops() -> None:
    emitter = RecordingEmitter()
    driver = ReadDriver(
        Conversation(CASCADE),
        [ScriptedSource("poll", [[SourceUnavailable("404")]])],
        emitter,
        options=FAST,
        clock=FakeClock(),  # type: ignore[arg-type]
    )
    driver.start()
    assert driver.task is not None
    await asyncio.wait_for(driver.task, 2)
    assert [(e.type, e.id, e.level) for e in emitter.emitted] == [  # type: ignore[union-attr]
        ("notice", f"{CASCADE}/notice/no-source", "error")
    ]


async def test_a_batch_that_fails_downstream_counts_against_the_source_which_is_reopened() -> None:
    emitter, stats = RecordingEmitter(), HarnessStats()
    emitter.fail_apply = 1
    stream = ScriptedSource("stream", [[STEP], [STEP]])
    driver = ReadDriver(
        Conversation(CASCADE), [stream], emitter, options=FAST, clock=FakeClock(), stats=stats
    )  # type: ignore[arg-type]
    await run(driver, lambda: emitter.applied, emitter)
    assert stats.source_errors == 1 and stream.opened == 2


async def test_a_failure_of_the_driver_itself_is_supervised_and_restarted() -> None:
    emitter, stats = RecordingEmitter(), HarnessStats()
    emitter.fail_emit = 1  # the no-source notice fails once: it escapes the read loop
    only = ScriptedSource("poll", [[SourceUnavailable("404")]])
    driver = ReadDriver(Conversation(CASCADE), [only], emitter, options=FAST, clock=FakeClock(), stats=stats)  # type: ignore[arg-type]
    driver.start()
    assert driver.task is not None
    await asyncio.wait_for(driver.task, 2)
    assert stats.driver_restarts == 1 and [e.type for e in emitter.emitted] == ["notice"]


async def test_a_restart_reads_the_new_cascade() -> None:
    emitter = RecordingEmitter()
    conversation = Conversation(CASCADE)
    stream = ScriptedSource("stream", [[STEP, "wait"], [STEP]])
    driver = ReadDriver(conversation, [stream], emitter, options=FAST, clock=FakeClock())  # type: ignore[arg-type]
    driver.start()
    await emitter.wait_for(lambda: emitter.applied)
    conversation.rebind("new")
    await driver.restart()
    await emitter.wait_for(lambda: len(emitter.applied) == 2)
    assert driver.task is not None
    driver.task.cancel()
    assert [b.cascade_id for b, _ in emitter.applied] == [CASCADE, "new"]
