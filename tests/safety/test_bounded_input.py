"""Issue #20, cases 3 and 4: what agy sends is bounded. A step of tens of megabytes is cut to a marker
as it arrives, on the stream and in a poll alike; the stream keeps serving (it used to be given up
for good at its first frame, every poll then moving the whole conversation); an answer still over
the limit is a clear, logged error, never unbounded memory."""

from __future__ import annotations

import json
import logging

import pytest

from agy_harness.adapters.rpc.bounded import MAX_STRING
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.errors import RpcBadResponse
from agy_harness.adapters.simulator import Simulator
from agy_harness.core.cut_marks import LEAD
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on, run_turn
from tests.rpc.stub import StubServer, const

HUGE = 40 << 20  # two such steps put the stream's first frame (a snapshot) past 64 MB
CUT = LEAD  # the start of the mark of a cut string (its size and hash follow)


async def huge_steps(sim: Simulator) -> None:
    for n in (1, 2):
        await sim.send_agent_message(sim.cascade_id, f"HUGE-{n} " + "x" * HUGE)


async def test_huge_steps_are_cut_and_the_stream_keeps_serving_gates(sim: Simulator) -> None:
    await huge_steps(sim)
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        await sink.answers.put(GateAnswer(allow=True))
        await run_turn(session, sink, "run: git status", timeout=300)  # a safety net, not a deadline
        stats = session.harness.stats
        assert stats.current_source == "stream" and stats.source_errors == 0  # never given up
    [result] = [e for e in sink.events if e.type == "tool_result"]
    assert "On branch main" in result.output  # type: ignore[union-attr]


async def test_a_poll_answer_carries_huge_steps_cut(sim: Simulator) -> None:
    await huge_steps(sim)
    async with RpcClient(sim.base_url) as client:
        answer = await client.call("GetCascadeTrajectorySteps", {"cascadeId": sim.cascade_id})
    texts = [json.dumps(s, ensure_ascii=False) for s in answer["steps"] if "HUGE-" in json.dumps(s)]
    assert len(texts) == 2 and all(len(t) < 3 * MAX_STRING for t in texts)
    assert all(CUT in t for t in texts)


async def test_an_answer_over_the_limit_is_a_clear_logged_error(caplog: pytest.LogCaptureFixture) -> None:
    many = json.dumps({"steps": [{"text": "y" * 1000} for _ in range(3000)]}).encode()  # 3 MB, no long string
    server = StubServer({"GetCascadeTrajectorySteps": const(200, many), "Heartbeat": const(200, b"{}")})
    async with server.running(), RpcClient(f"https://127.0.0.1:{server.port}") as client:
        client.max_body = 1 << 20
        with caplog.at_level(logging.ERROR), pytest.raises(RpcBadResponse, match="over 1048576 bytes"):
            await client.call("GetCascadeTrajectorySteps", {"cascadeId": "c"})
        assert any("GetCascadeTrajectorySteps" in r.getMessage() for r in caplog.records)
        assert await client.call("Heartbeat", {}) == {}  # and the client goes on
