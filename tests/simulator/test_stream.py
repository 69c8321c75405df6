"""StreamAgentStateUpdates: envelopes, replay, growing snapshots, the stream projection, trailers."""

from __future__ import annotations

import asyncio
import itertools
import json

from agy_harness.adapters.simulator import Simulator, stream_projection
from agy_harness.adapters.simulator import envelope as env

from .helpers import client, short, steps_by_index, stream


async def test_replay_then_live_updates_in_envelopes(sim: Simulator) -> None:
    await sim.submit_user_turn("Say hello in one short sentence.")
    await sim.wait_idle()
    async with client() as c, stream(c, sim) as s:
        assert s.resp.status_code == 200
        assert s.resp.http_version == "HTTP/2"
        assert s.resp.headers["content-type"] == "application/connect+json"
        flags, data = await s.next_frame()
        assert flags == 0
        assert s.raw[:5] == env.HEADER.pack(0, len(data))  # [flag][BE uint32 length]
        update = json.loads(data)["update"]
        assert update["conversationId"] == sim.cascade_id
        assert update["status"] == "CASCADE_RUN_STATUS_IDLE"
        su = update["mainTrajectoryUpdate"]["stepsUpdate"]
        assert su["indices"] == [0, 1, 2, 3]
        assert su["steps"] == sim.stream_steps() == [stream_projection(x) for x in sim.steps()]
        await sim.submit_user_turn("hello again")
        await s.until(
            lambda s: s.updates()[-1]["status"] == "CASCADE_RUN_STATUS_IDLE" and len(s.updates()) > 2
        )
    later = steps_by_index(s.updates()[1:])
    assert min(later) == 4  # only the changed steps after the replay
    assert short(later[4][0]) == "USER_INPUT"
    assert s.updates()[1]["status"] == "CASCADE_RUN_STATUS_RUNNING"


async def test_planner_snapshots_grow_while_generating() -> None:
    async with Simulator(pace=0.3) as sim, client() as c, stream(c, sim) as s:
        await s.next_frame()
        await sim.submit_user_turn("Say hello in one short sentence.")
        await s.until(
            lambda s: any(
                x.get("status") == "CORTEX_STEP_STATUS_DONE" for x in steps_by_index(s.updates()).get(2, [])
            ),
            timeout=20,
        )
    snaps = steps_by_index(s.updates())[2]
    generating = [x for x in snaps if x["status"] == "CORTEX_STEP_STATUS_GENERATING"]
    thinking = [x["plannerResponse"]["thinking"] for x in generating if "thinking" in x["plannerResponse"]]
    texts = [
        x["plannerResponse"]["modifiedResponse"]
        for x in generating
        if "modifiedResponse" in x["plannerResponse"]
    ]
    assert len(thinking) >= 2 and len(texts) >= 3
    for seq in (thinking, texts):
        for a, b in itertools.pairwise(seq):
            assert b.startswith(a) and len(b) >= len(a)
        assert len(seq[-1]) > len(seq[0])
    assert all("response" not in x["plannerResponse"] for x in generating)
    done = snaps[-1]
    assert done["status"] == "CORTEX_STEP_STATUS_DONE"
    assert done["plannerResponse"]["modifiedResponse"].startswith(texts[-1])
    assert "thinking" not in done["plannerResponse"]
    # the poll projection of the same step has what the stream strips
    poll = sim.steps()[2]["plannerResponse"]
    assert poll["response"] == poll["modifiedResponse"] and poll["thinkingSignature"]


async def test_stream_projection_strips_tool_calls(sim: Simulator) -> None:
    await sim.submit_user_turn("list the directory then start a subagent")
    await sim.wait_idle()
    async with client() as c, stream(c, sim) as s:
        await s.next_frame()
    replay = s.updates()[0]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"]
    poll = sim.steps()
    kinds = {short(x) for x in replay}
    assert {"LIST_DIRECTORY", "GENERIC", "PLANNER_RESPONSE"} <= kinds
    for streamed, polled in zip(replay, poll, strict=True):
        assert "internalMetadata" not in streamed["metadata"]
        if short(polled) == "GENERIC":
            assert streamed["metadata"]["toolCall"] == polled["metadata"]["toolCall"]
        else:
            assert "toolCall" not in streamed["metadata"]
        if "toolCalls" in polled.get("plannerResponse", {}):
            assert "toolCalls" not in streamed["plannerResponse"]
    assert any("toolCall" in p["metadata"] for p in poll if short(p) == "LIST_DIRECTORY")


async def test_frames_leave_the_conversations_steps_as_they_were(sim: Simulator) -> None:
    """Frames share the steps' values (no deep copy each frame): streaming a conversation whole takes
    nothing out of what the poll answers, and each streamed step is the stream projection of its
    polled one."""
    await sim.submit_user_turn("list the directory then start a subagent")
    await sim.wait_idle()
    before = json.dumps(sim.steps())
    async with client() as c, stream(c, sim) as s:
        await s.next_frame()
    replay = s.updates()[0]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"]
    assert json.dumps(sim.steps()) == before
    assert replay == [stream_projection(x) for x in sim.steps()]
    assert any("internalMetadata" in x["metadata"] for x in sim.steps())  # (kept in the polled step)


async def test_idle_stream_long_polls_then_ends_with_a_trailer_on_stop() -> None:
    sim = await Simulator().start()
    try:
        async with client() as c, stream(c, sim) as s:
            await s.next_frame()
            # idle: no frame, connection kept open
            try:
                await s.next_frame(timeout=0.3)
                raise AssertionError("an idle stream sent a frame")
            except TimeoutError:
                pass
            assert not s.ended
            await sim.stop()
            await s.drain()
    finally:
        await sim.stop()
    assert s.ended
    assert s.frames[-1][0] == env.FLAG_END_STREAM
    assert s.trailer() == {}


async def test_bare_json_body_gets_the_promised_bytes_error(sim: Simulator) -> None:
    body = json.dumps({"conversationId": sim.cascade_id}).encode()
    async with client() as c, stream(c, sim, body=body) as s:
        await s.drain()
    assert s.resp.status_code == 200
    error = (s.trailer() or {}).get("error")
    assert error is not None and error["code"] == "invalid_argument"
    assert "promised" in error["message"] and "bytes in enveloped message" in error["message"]
    size = int.from_bytes(body[1:5], "big")
    assert f"promised {size} bytes" in error["message"]


async def test_unknown_conversation_ends_with_an_error_trailer(sim: Simulator) -> None:
    async with client() as c, stream(c, sim, "nope") as s:
        await s.drain()
    assert s.trailer() == {"error": {"code": "unknown", "message": "trajectory not found"}}


async def test_gates_are_visible_in_the_stream_and_status_goes_idle(sim: Simulator) -> None:
    async with client() as c, stream(c, sim) as s:
        await s.next_frame()
        await sim.submit_user_turn("run: pwd")
        await s.until(
            lambda s: any(
                x["status"] == "CORTEX_STEP_STATUS_WAITING"
                for snaps in steps_by_index(s.updates()).values()
                for x in snaps
            )
        )
        waiting = next(
            x
            for snaps in steps_by_index(s.updates()).values()
            for x in snaps
            if x["status"] == "CORTEX_STEP_STATUS_WAITING"
        )
        assert waiting["requestedInteraction"]["permission"]["resource"]["target"] == "pwd"
        assert s.updates()[-1]["status"] == "CASCADE_RUN_STATUS_RUNNING"
        index = waiting["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"]
        await sim.handle_interaction(
            sim.cascade_id,
            {
                "trajectoryId": waiting["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"],
                "stepIndex": index,
                "permission": {"allow": True},
            },
        )
        await s.until(lambda s: s.updates()[-1]["status"] == "CASCADE_RUN_STATUS_IDLE")
    final = steps_by_index(s.updates())[index][-1]
    assert final["status"] == "CORTEX_STEP_STATUS_DONE"
    assert final["runCommand"]["combinedOutput"]["full"] == sim.workspace + "\n"


async def test_a_stream_per_child_cascade(sim: Simulator) -> None:
    await sim.submit_user_turn("start a subagent")
    await sim.wait_idle()
    [child] = sim.children()
    async with client() as c, stream(c, sim, child) as s:
        await s.next_frame()
    update = s.updates()[0]
    assert update["conversationId"] == child
    assert update["mainTrajectoryUpdate"]["stepsUpdate"]["steps"] == sim.stream_steps(child)
    await asyncio.sleep(0)
