"""The harness driving the omnigent sink: recorded agy steps arrive at the test omnigent exactly as the
wire format, an outage in the middle costing nothing; a gate goes through the hook and back to agy."""

from __future__ import annotations

import asyncio
from typing import Any

from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy
from agy_harness.composition.service.harness import Harness, HarnessOptions
from agy_harness.core.display import request_hash
from agy_harness.ports.events import Event
from tests.core.fixtures import CASCADE, fixture
from tests.fakes import MemorySnapshot, RecordingDelivery, RecordingSink, ScriptedSource

from .omnigent_app import OmnigentApp
from .test_omnigent import expected_bodies

FAST = HarnessOptions(fallback_backoff=0.01, max_backoff=0.05, sink_retry=0.01, directory_interval=0)
TURN = ["user_input", "planner_response_tool_call_run_command", "run_command_done", "planner_response_text"]


def steps(*names: str) -> list[Any]:
    return [fixture(n) for n in names]


async def reference_events() -> list[Event]:
    sink = RecordingSink()
    async with Harness(
        cascade_id=CASCADE,
        sources=[ScriptedSource("stream", [[steps(*TURN)]])],
        snapshot=MemorySnapshot(),
        sink=sink,
        options=FAST,
    ):
        await sink.wait_for(lambda: bool(sink.events) and sink.events[-1].type == "status")
    return sink.events


async def test_a_turn_arrives_exactly_once_in_order_through_an_outage(omnigent: OmnigentApp) -> None:
    expected = expected_bodies(await reference_events())
    assert {"external_conversation_item", "external_session_status"} <= {b["type"] for b in expected}
    omnigent.fail_mode = "drop"
    omnigent.fail_next = 6
    # no retry budget: the sink gives up at each failure and the harness re-delivers the unaccepted suffix
    sink = OmnigentSink(omnigent.base_url, omnigent.session_id, retry=RetryPolicy(initial=0.01, deadline=0.0))
    async with (
        sink,
        Harness(
            cascade_id=CASCADE,
            sources=[ScriptedSource("stream", [[steps(*TURN)]])],
            snapshot=MemorySnapshot(),
            sink=sink,
            options=FAST,
        ),
    ):
        await omnigent.wait_for(lambda: len(omnigent.received) >= len(expected))
    assert omnigent.received == expected
    assert sum(h.outcome == "failed" for h in omnigent.hits) == 6
    assert sink.stats.gave_up == 6 and sink.stats.retries == 0


async def test_a_gate_goes_through_the_hook_and_back_to_agy(omnigent: OmnigentApp) -> None:
    delivery = RecordingDelivery()
    waiting = steps("run_command_waiting")
    async with (
        OmnigentSink(omnigent.base_url, omnigent.session_id) as sink,
        Harness(
            cascade_id=CASCADE,
            sources=[ScriptedSource("s", [[waiting]])],
            snapshot=MemorySnapshot(waiting),
            sink=sink,
            delivery=delivery,
            options=FAST,
        ),
    ):
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        params = omnigent.hook_posts[0]["params"]
        assert params["phase"] == "agy_permission" and params["command"] == "pwd"
        assert params["request_hash"] == request_hash("pwd")  # beside the command, not in it
        await omnigent.push_answer({"action": "decline"})  # the web card's Reject
        await omnigent.wait_for(lambda: any(h.outcome == "answered" for h in omnigent.hits))
        async with asyncio.timeout(5):
            while not delivery.delivered:
                await asyncio.sleep(0.01)
    assert [d["permission"] for d in delivery.delivered] == [{"allow": False}]
    assert delivery.delivered[0]["stepIndex"] == params["step_index"]
