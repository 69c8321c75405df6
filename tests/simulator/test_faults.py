"""Fault injection: each switch on ``sim.faults`` changes what the wire carries, once or until cleared."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator import envelope as env

from .helpers import call, client, ok, stream


async def test_cut_stream_mid_frame_once(sim: Simulator) -> None:
    await sim.submit_user_turn("hello")
    await sim.wait_idle()
    sim.faults.cut_stream_once = True
    async with client() as c:
        async with stream(c, sim) as s:
            await s.drain()
        assert s.frames == [] and s.trailer() is None
        assert len(s.raw) > 0 and s.pending == s.raw  # half an envelope, then the end
        header_len = int.from_bytes(s.raw[1:5], "big")
        assert len(s.raw) - 5 < header_len
        assert sim.faults.cut_stream_once is False and sim.faults.fired == ["cut_stream"]
        async with stream(c, sim) as s2:  # once: the next stream is whole
            await s2.next_frame()
        assert len(s2.updates()[0]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"]) == 4


async def test_malformed_frame_then_carries_on(sim: Simulator) -> None:
    sim.faults.malformed_frame_once = True
    async with client() as c, stream(c, sim) as s:
        await s.until(lambda s: len(s.frames) >= 2)
    flags, data = s.frames[0]
    assert flags == 0
    with pytest.raises(ValueError):
        json.loads(data)
    assert json.loads(s.frames[1][1])["update"]["conversationId"] == sim.cascade_id


async def test_non_dict_step_inside_an_update(sim: Simulator) -> None:
    await sim.submit_user_turn("hello")
    await sim.wait_idle()
    sim.faults.non_dict_step_once = True
    async with client() as c, stream(c, sim) as s:
        await s.next_frame()
    steps = s.updates()[0]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"]
    assert [type(x).__name__ for x in steps] == ["dict"] * 4 + ["str"]


@pytest.mark.parametrize("status", [500, 503])
async def test_fail_a_named_method_for_n_calls(sim: Simulator, status: int) -> None:
    sim.faults.fail("GetCascadeTrajectorySteps", status=status, times=2)
    body = {"cascadeId": sim.cascade_id}
    async with client() as c:
        for _ in range(2):
            resp = await call(c, sim, "GetCascadeTrajectorySteps", body)
            assert resp.status_code == status
            assert resp.json()["code"] == ("unavailable" if status == 503 else "internal")
            assert (await call(c, sim, "Heartbeat")).status_code == 200  # other methods unaffected
        assert (await ok(c, sim, "GetCascadeTrajectorySteps", body)) == {"steps": []}
    assert sim.faults.fired == [f"fail:GetCascadeTrajectorySteps:{status}"] * 2


async def test_fail_the_stream_method(sim: Simulator) -> None:
    sim.faults.fail("StreamAgentStateUpdates", status=503)
    async with client() as c, stream(c, sim) as s:
        await s.drain()
    assert s.resp.status_code == 503


async def test_delay_responses(sim: Simulator) -> None:
    sim.faults.delay = 1.0
    sim.faults.delay_methods = {"Heartbeat"}
    async with client() as c:
        await ok(c, sim, "GetAvailableModels")  # not delayed
        with pytest.raises(httpx.ReadTimeout):
            await c.post(
                f"{sim.base_url}/exa.language_server_pb.LanguageServerService/Heartbeat",
                json={},
                headers={"Content-Type": "application/json"},
                timeout=0.2,
            )
        sim.faults.reset()
        assert await ok(c, sim, "Heartbeat") == {}


async def test_stall_sends_nothing_until_cleared(sim: Simulator) -> None:
    sim.faults.stall_stream = True
    async with client() as c, stream(c, sim) as s:
        await sim.submit_user_turn("hello")
        await sim.wait_idle()
        with pytest.raises(TimeoutError):
            await s.next_frame(timeout=0.3)
        assert s.raw == b"" and not s.ended
        sim.faults.stall_stream = False
        await s.next_frame()
    assert s.updates()[0]["mainTrajectoryUpdate"]["stepsUpdate"]["indices"] == [0, 1, 2, 3]


async def test_stalled_stream_ends_without_trailer_on_stop() -> None:
    sim = await Simulator().start()
    try:
        sim.faults.stall_stream = True
        async with client() as c, stream(c, sim) as s:
            await asyncio.sleep(0.05)
            await sim.stop()
            await s.drain()
    finally:
        await sim.stop()
    assert s.frames == [] and s.trailer() is None


async def test_restart_moves_to_a_new_port_and_keeps_state() -> None:
    async with Simulator() as sim, client() as c:
        await sim.submit_user_turn("hello")
        await sim.wait_idle()
        old_port, old_plain, cascade = sim.port, sim.plain_port, sim.cascade_id
        async with stream(c, sim) as s:
            await s.next_frame()
            await sim.restart()
            await s.drain()
        assert s.trailer() is None  # the old server died: no trailer
        assert sim.port != old_port and sim.plain_port != old_plain
        assert sim.cascade_id == cascade
        got = await ok(c, sim, "GetCascadeTrajectorySteps", {"cascadeId": cascade})
        assert len(got["steps"]) == 4
        with pytest.raises(httpx.ConnectError):
            async with httpx.AsyncClient(verify=False) as fresh:
                await fresh.post(f"https://127.0.0.1:{old_port}/", json={})
    assert env.FLAG_END_STREAM == 2
