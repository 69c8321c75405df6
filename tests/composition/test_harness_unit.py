"""The read driver, the gate bridge and interrupt, on in-memory adapters."""

from __future__ import annotations

import logging
from typing import Any

from agy_harness.adapters.store.cursor_file import MemoryCursorStore
from agy_harness.composition.service.harness import Harness, HarnessOptions
from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import Event
from agy_harness.ports.protocols import GateAnswer, InteractionRejected, SourceUnavailable
from tests.core.fixtures import CASCADE, fixture
from tests.fakes import (
    FakeClock,
    MemorySnapshot,
    RecordingDelivery,
    RecordingInterrupter,
    RecordingSender,
    RecordingSink,
    ScriptedSource,
)

FAST = HarnessOptions(fallback_backoff=0.01, max_backoff=0.05, sink_retry=0.001, directory_interval=0)
TURN = ["user_input", "planner_response_tool_call_run_command", "run_command_done", "planner_response_text"]


def steps(*names: str) -> list[Any]:
    return [fixture(n) for n in names]


def committed(events: list[Event]) -> list[str]:
    return [e.id for e in events if e.type not in ("text_delta", "reasoning_delta", "notice")]


async def clean_run() -> list[str]:
    sink = RecordingSink()
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("stream", [[steps(*TURN)]])],
        snapshot=MemorySnapshot(),
        sink=sink,
        options=FAST,
        clock=FakeClock(),
    ):
        await sink.wait_for(lambda: any(e.type == "assistant_message" for e in sink.events))
    return committed(sink.events)


async def test_stream_error_falls_back_to_poll_and_returns_to_the_stream() -> None:
    clean = await clean_run()
    stream = ScriptedSource(
        "stream",
        [
            [steps("user_input"), ConnectionError("cut mid-frame")],
            [steps("user_input", "planner_response_tool_call_run_command"), "end"],  # replay after reconnect
            [steps(*TURN)],
        ],
    )
    poll = ScriptedSource(
        "poll", [[steps("user_input", "planner_response_tool_call_run_command")]] * 5, live=False
    )
    sink = RecordingSink()
    h = Harness(
        cascade_id=CASCADE,
        sources=[stream, poll],
        snapshot=MemorySnapshot(),
        sink=sink,
        options=FAST,
        clock=FakeClock(),
    )
    async with h:
        await sink.wait_for(lambda: any(e.type == "assistant_message" for e in sink.events))
    assert committed(sink.events) == clean  # nothing lost, nothing twice
    assert poll.opened >= 1 and stream.opened == 3
    assert h.stats.source_errors == 1
    assert h.stats.current_source == "stream"


async def test_a_missing_method_demotes_the_source_for_good(caplog: Any) -> None:
    stream = ScriptedSource("stream", [[SourceUnavailable("StreamAgentStateUpdates: 404")]])
    poll = ScriptedSource("poll", [[steps(*TURN)]], live=False)
    sink = RecordingSink()
    with caplog.at_level(logging.WARNING, logger="agy_harness.harness"):
        h = Harness(
            cascade_id=CASCADE,
            sources=[stream, poll],
            snapshot=MemorySnapshot(),
            sink=sink,
            options=FAST,
            clock=FakeClock(),
        )
        async with h:
            await sink.wait_for(lambda: any(e.type == "assistant_message" for e in sink.events))
    assert h.stats.demotions == ["stream"] and stream.opened == 1
    assert [r.getMessage() for r in caplog.records if "demoted" in r.getMessage()] == [
        "step source 'stream' cannot serve this agy (StreamAgentStateUpdates: 404); demoted to poll"
    ]
    assert committed(sink.events) == await clean_run()


async def test_sink_outage_costs_nothing_and_the_cursor_follows_acks() -> None:
    sink = RecordingSink()
    sink.fail_next = 3
    sink.accept_at_most = 1  # and it takes one event at a time
    cursors = MemoryCursorStore()
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("stream", [[steps(*TURN)]])],
        snapshot=MemorySnapshot(),
        sink=sink,
        cursor_store=cursors,
        options=FAST,
        clock=FakeClock(),
    ):
        await sink.wait_for(lambda: any(e.type == "assistant_message" for e in sink.events))
        await sink.wait_for(lambda: sink.events[-1].type == "status")
    assert committed(sink.events) == await clean_run()
    saved = cursors.load(CASCADE)
    assert saved is not None
    whole = Reconciler(CASCADE)
    whole.feed_all(steps(*TURN))  # the cursor ends holding all of it: every step key (and its aliases)
    assert saved.committed == sorted(whole.state.committed) and saved.state["status"] == "idle"


async def test_a_restart_with_a_cursor_emits_nothing_already_delivered() -> None:
    cursors = MemoryCursorStore()
    first = RecordingSink()
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("stream", [[steps(*TURN[:2])]])],
        snapshot=MemorySnapshot(),
        sink=first,
        cursor_store=cursors,
        options=FAST,
        clock=FakeClock(),
    ):
        await first.wait_for(lambda: any(e.type == "usage" for e in first.events))
    second = RecordingSink()
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("stream", [[steps(*TURN)]])],
        snapshot=MemorySnapshot(),
        sink=second,
        cursor_store=cursors,
        options=FAST,
        clock=FakeClock(),
    ):
        await second.wait_for(lambda: any(e.type == "assistant_message" for e in second.events))
    union = committed(first.events) + committed(second.events)
    assert union == await clean_run()
    usage = [e for e in second.events if e.type == "usage"][-1]
    assert usage.cumulative_input_tokens == 1031 + 17161  # type: ignore[union-attr]


async def test_the_driver_survives_unexpected_errors() -> None:
    stream = ScriptedSource("stream", [[RuntimeError("boom")], [ValueError("bad")], [steps(*TURN)]])
    sink = RecordingSink()
    h = Harness(
        cascade_id=CASCADE,
        sources=[stream],
        snapshot=MemorySnapshot(),
        sink=sink,
        options=FAST,
        clock=FakeClock(),
    )
    async with h:
        await sink.wait_for(lambda: any(e.type == "assistant_message" for e in sink.events))
    assert h.stats.source_errors == 2


def waiting_at(index: int, name: str = "run_command_waiting", status: str = "") -> dict[str, Any]:
    step = fixture(name)
    step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = index
    if status:
        step["status"] = status
    return step


async def test_gate_answered_and_delivered_to_the_surfaced_step() -> None:
    sink, delivery = RecordingSink(), RecordingDelivery()
    snap = MemorySnapshot(steps("run_command_waiting"))
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("s", [[steps("run_command_waiting")]])],
        snapshot=snap,
        sink=sink,
        delivery=delivery,
        options=FAST,
        clock=FakeClock(),
    ):
        await sink.wait_for(lambda: sink.asked)
        await sink.answers.put(GateAnswer(allow=True))
        await sink.wait_for(lambda: delivery.delivered)
    assert delivery.delivered == [
        {"trajectoryId": sink.asked[0].trajectory_id, "stepIndex": 6, "permission": {"allow": True}}
    ]


async def test_a_gate_that_timed_out_while_the_human_thought_goes_to_the_retry() -> None:
    sink, delivery = RecordingSink(), RecordingDelivery()
    snap = MemorySnapshot(steps("run_command_waiting"))
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("s", [[steps("run_command_waiting")]])],
        snapshot=snap,
        sink=sink,
        delivery=delivery,
        options=FAST,
        clock=FakeClock(),
    ) as h:
        await sink.wait_for(lambda: sink.asked)
        snap.steps = [fixture("run_command_error"), waiting_at(8)]  # agy timed out and re-asked
        await sink.answers.put(GateAnswer(allow=False))
        await sink.wait_for(lambda: delivery.delivered)
        assert h.parked_gate is None
    assert delivery.delivered == [
        {"trajectoryId": sink.asked[0].trajectory_id, "stepIndex": 8, "permission": {"allow": False}}
    ]


async def test_a_shape_error_is_reported_once_and_not_retried() -> None:
    sink = RecordingSink()
    delivery = RecordingDelivery([InteractionRejected("input not registered for step 6", status=500)] * 5)
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("s", [[steps("run_command_waiting")]])],
        snapshot=MemorySnapshot(steps("run_command_waiting")),
        sink=sink,
        delivery=delivery,
        options=FAST,
        clock=FakeClock(),
    ):
        await sink.wait_for(lambda: sink.asked)
        await sink.answers.put(GateAnswer(allow=True))
        await sink.wait_for(lambda: any(e.type == "notice" for e in sink.events))
    notices = [e for e in sink.events if e.type == "notice"]
    assert len(notices) == 1 and notices[0].level == "error"  # type: ignore[union-attr]
    assert "input not registered for step 6" in notices[0].text  # type: ignore[union-attr]
    assert len(delivery.reject) == 4  # exactly one attempt


async def test_a_stale_rejection_is_retargeted_to_agys_retry() -> None:
    sink = RecordingSink()
    delivery = RecordingDelivery([InteractionRejected("input not registered for step 6", status=500)])
    snap = MemorySnapshot(steps("run_command_waiting"))

    def timed_out(cascade_id: str, interaction: dict[str, Any]) -> None:
        if delivery.reject:  # agy timed the step out just as the answer arrived
            snap.steps = [fixture("run_command_error"), waiting_at(9)]

    delivery.on_deliver = timed_out
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("s", [[steps("run_command_waiting")]])],
        snapshot=snap,
        sink=sink,
        delivery=delivery,
        options=FAST,
        clock=FakeClock(),
    ):
        await sink.wait_for(lambda: sink.asked)
        await sink.answers.put(GateAnswer(allow=True))
        await sink.wait_for(lambda: delivery.delivered)
    assert [d["stepIndex"] for d in delivery.delivered] == [9]


async def test_a_gate_answered_elsewhere_is_withdrawn_from_the_human() -> None:
    sink = RecordingSink()
    stream = ScriptedSource("s", [[steps("run_command_waiting"), "wait"]])
    snap = MemorySnapshot(steps("run_command_waiting"))
    h = Harness(
        cascade_id=CASCADE,
        sources=[stream],
        snapshot=snap,
        sink=sink,
        delivery=RecordingDelivery(),
        options=FAST,
        clock=FakeClock(),
    )
    async with h:
        await sink.wait_for(lambda: sink.asked)
        events = h.reconciler.feed(fixture("run_command_done"))  # the TUI answered it
        await h.emitter.emit(events)
        await sink.wait_for(lambda: sink.cancelled)
    assert sink.cancelled == [sink.asked[0].gate_id]
    assert [e.type for e in sink.events][-3:] == ["gate_withdrawn", "tool_call", "tool_result"]


async def test_interrupt_during_a_parked_gate_denies_it() -> None:
    sink, delivery, interrupter = RecordingSink(), RecordingDelivery(), RecordingInterrupter()
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("s", [[steps("run_command_waiting")]])],
        snapshot=MemorySnapshot(steps("run_command_waiting")),
        sink=sink,
        delivery=delivery,
        interrupter=interrupter,
        options=FAST,
        clock=FakeClock(),
    ) as h:
        await sink.wait_for(lambda: sink.asked)
        report = await h.interrupt()
    assert report.cancelled and report.denied_gates == (sink.asked[0].gate_id,)
    assert delivery.delivered[0]["permission"] == {"allow": False}
    assert interrupter.calls == 1 and sink.cancelled == [sink.asked[0].gate_id]


async def test_a_turn_sender_that_answers_404_is_demoted_to_the_next(caplog: Any) -> None:
    rpc = RecordingSender("rpc", SourceUnavailable("SendUserCascadeMessage: 404"))
    tmux = RecordingSender("tmux")
    h = Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("s", [])],
        snapshot=MemorySnapshot(),
        sink=RecordingSink(),
        turn_senders=[rpc, tmux],
        options=FAST,
        clock=FakeClock(),
    )
    with caplog.at_level(logging.WARNING, logger="agy_harness.harness"):
        assert await h.send("one") == "tmux"
        assert await h.send("two") == "tmux"
    assert tmux.texts == ["one", "two"] and h.stats.demotions == ["rpc"]
    assert sum("demoted to tmux" in r.getMessage() for r in caplog.records) == 1


async def test_an_answer_survives_agy_being_briefly_unreachable() -> None:
    sink, delivery = RecordingSink(), RecordingDelivery()
    snap = MemorySnapshot(steps("run_command_waiting"))
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("s", [[steps("run_command_waiting")]])],
        snapshot=snap,
        sink=sink,
        delivery=delivery,
        options=FAST,
        clock=FakeClock(),
    ):
        await sink.wait_for(lambda: sink.asked)
        snap.fail_next = 2  # the re-reads at delivery fail twice
        await sink.answers.put(GateAnswer(allow=True))
        await sink.wait_for(lambda: delivery.delivered)
    assert [d["stepIndex"] for d in delivery.delivered] == [6]
