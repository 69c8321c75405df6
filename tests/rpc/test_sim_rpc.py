"""The RPC adapters against the simulator over real TLS HTTP/2: discovery, turns, gates, interrupt,
rotation and the model catalog."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from agy_harness.adapters.rpc.actions import (
    PlanModelResolver,
    RpcCascadeDirectory,
    RpcInteractionDelivery,
    RpcInterrupter,
    RpcModelCatalog,
    RpcTurnSender,
)
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.discovery import PsutilScanner, Resolver
from agy_harness.adapters.rpc.errors import (
    AmbiguousAgy,
    NoAgyFound,
    RpcError,
    RpcUnreachable,
    StreamBroken,
    StreamIdle,
)
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
from agy_harness.adapters.simulator import MODELS
from agy_harness.adapters.simulator.scenarios import LONG_TEXT
from agy_harness.core.steps import parse_step, planner_text, user_model, user_text, waiting_interaction
from agy_harness.ports.protocols import InteractionRejected

ME = [os.getpid()]


def of_type(steps: list[Any], short: str) -> list[Any]:
    return [s for s in map(parse_step, steps) if s is not None and s.type == short]


def waiting(steps: list[Any]) -> list[Any]:
    return [s for s in map(parse_step, steps) if s is not None and s.status == "WAITING"]


# ---------------------------------------------------------------------------------------- discovery


async def test_discovery_binds_the_simulator_not_its_plain_listener(sim: Any) -> None:
    ports = PsutilScanner().listen_ports(os.getpid())
    assert {sim.port, sim.plain_port} <= ports
    binding = await Resolver(sim.cascade_id, pids=ME).resolve()
    assert binding.port == sim.port and binding.base_url == sim.base_url.rstrip("/")


async def test_discovery_never_binds_a_foreign_agy(sim: Any) -> None:
    from agy_harness.adapters.simulator import Simulator

    async with Simulator() as other:
        assert (await Resolver(other.cascade_id, pids=ME).resolve()).port == other.port
        assert (await Resolver(sim.cascade_id, pids=ME).resolve()).port == sim.port
        with pytest.raises(AmbiguousAgy):  # without a cascade id two live agy are ambiguous
            await Resolver(None, pids=ME).resolve()
    with pytest.raises(NoAgyFound):
        await Resolver("no-such-cascade", pids=ME).resolve()


async def test_discovery_port_override_is_verified(sim: Any) -> None:
    assert (await Resolver(sim.cascade_id, port=sim.port, pids=ME).resolve()).port == sim.port
    with pytest.raises(NoAgyFound):
        await Resolver(sim.cascade_id, port=sim.plain_port, pids=ME).resolve()


async def test_re_resolve_after_an_agy_restart(sim: Any) -> None:
    resolver = Resolver(sim.cascade_id, pids=ME)
    old = (await resolver.resolve()).port
    await sim.restart()
    assert sim.port != old
    async with RpcClient(f"https://127.0.0.1:{old}") as client:
        binding = await resolver.re_resolve(deadline=5.0)
        client.rebind(binding.base_url, csrf_token=binding.csrf_token)
        assert await client.call("Heartbeat", {}) == {}
    assert binding.port == sim.port


async def test_discovery_follows_a_cleared_cascade(sim: Any) -> None:
    new_id = await sim.clear()
    assert (await Resolver(new_id, pids=ME).resolve()).port == sim.port


# -------------------------------------------------------------------------------------------- turns


async def test_rpc_turn_send_makes_exactly_one_user_input_with_the_resolved_model(sim: Any) -> None:
    async with RpcClient(sim.base_url) as client:
        catalog = RpcModelCatalog(client)
        models = await catalog.models()
        assert models and any(m.recommended for m in models)
        recommended = next(m.model for m in models if m.recommended)
        assert [m.model for m in models if m.default] == [recommended] and models[0].model != recommended
        assert all(m.label for m in models)  # displayName
        resolver = PlanModelResolver(RpcPollSource(client), catalog)
        assert await resolver(sim.cascade_id) == recommended  # no USER_INPUT yet
        await RpcTurnSender(client, resolver).send(sim.cascade_id, "say hello\nover two lines")
        await sim.wait_idle(timeout=10.0)
        inputs = of_type(sim.steps(), "USER_INPUT")
        assert len(inputs) == 1
        assert user_text(inputs[0]) == "say hello\nover two lines"
        assert user_model(inputs[0]) == recommended
        assert await resolver(sim.cascade_id) == recommended  # now read back from the USER_INPUT


async def test_plan_model_follows_the_tui_users_choice(sim: Any) -> None:
    chosen = next(m for m, info in MODELS.items() if not info["recommended"])
    await sim.submit_user_turn("say hello", model=chosen)
    await sim.wait_idle(timeout=10.0)
    async with RpcClient(sim.base_url) as client:
        resolver = PlanModelResolver(RpcPollSource(client), RpcModelCatalog(client))
        assert await resolver(sim.cascade_id) == chosen
        await RpcTurnSender(client, resolver).send(sim.cascade_id, "say hello again")
        await sim.wait_idle(timeout=10.0)
    inputs = of_type(sim.steps(), "USER_INPUT")
    assert [user_model(s) for s in inputs] == [chosen, chosen]
    assert user_text(inputs[-1]) == "say hello again"


async def test_a_sessions_turns_read_no_conversation_and_follow_the_tui_users_model(sim: Any) -> None:
    """Each turn's model is the latest USER_INPUT's, followed from the events the session delivers:
    a turn reads no conversation (it read the whole of it every turn: 1.2 s a turn with a 50 MB step
    in it), and a model the user picks in agy's terminal is the next turn's."""
    from agy_harness.adapters.sinks.queue import QueueSink
    from agy_harness.composition.root.session import open_session

    chosen, other = (m for m, info in MODELS.items() if not info["recommended"])
    await sim.submit_user_turn("say hello", model=chosen)
    await sim.wait_idle(timeout=10.0)
    reads = 0
    rpc = sim._rpc

    async def counted(method: str, request: dict[str, Any]) -> dict[str, Any]:
        nonlocal reads
        reads += method == "GetCascadeTrajectorySteps"
        return dict(await rpc(method, request))

    sim._rpc = counted
    sink = QueueSink()

    async def turns(n: int) -> None:  # until the n-th turn's reply is delivered
        while n:
            n -= (await asyncio.wait_for(sink.queue.get(), 20)).type == "assistant_message"

    async with open_session(base_url=sim.base_url, cascade_id=sim.cascade_id, sink=sink) as session:
        await turns(1)  # the history (its reply) delivered
        reads = 0
        await session.send("say hello again")
        await turns(1)
        await sim.submit_user_turn("in agy's terminal", model=other)
        await turns(1)
        await session.send("and once more")
        await turns(1)
        assert reads == 0
    inputs = of_type(sim.steps(), "USER_INPUT")
    assert [user_model(s) for s in inputs] == [chosen, chosen, other, other]


# -------------------------------------------------------------------------------------------- gates


async def _park_on_a_permission_gate(sim: Any) -> Any:
    await sim.submit_user_turn("run the command pwd")
    await sim.wait_idle(timeout=10.0)
    gates = [s for s in waiting(sim.steps()) if (w := waiting_interaction(s)) and w[0] == "permission"]
    assert len(gates) == 1, [s.type for s in waiting(sim.steps())]
    return gates[0]


@pytest.mark.parametrize("allow", [True, False])
async def test_permission_gate_round_trip(sim: Any, allow: bool) -> None:
    gate = await _park_on_a_permission_gate(sim)
    interaction = {"trajectoryId": gate.key.trajectory_id, "stepIndex": gate.key.step_index,
                   "permission": {"allow": allow}}  # fmt: skip
    async with RpcClient(sim.base_url) as client:
        await RpcInteractionDelivery(client).deliver(sim.cascade_id, interaction)
        await sim.wait_idle(timeout=10.0)
        after = {
            str(s.key): s
            for s in map(parse_step, await RpcPollSource(client).read_steps(sim.cascade_id))
            if s
        }
    assert after[str(gate.key)].status != "WAITING"
    # a second answer to the same step is stale: agy's "input not registered"
    async with RpcClient(sim.base_url) as client:
        with pytest.raises(InteractionRejected) as info:
            await RpcInteractionDelivery(client).deliver(sim.cascade_id, interaction)
    assert info.value.status == 500 and "input not registered" in info.value.message


async def test_wrong_interaction_shape_is_rejected(sim: Any) -> None:
    gate = await _park_on_a_permission_gate(sim)
    wrong = {"permission": {"allow": True}}  # trajectoryId/stepIndex missing: proto-JSON would drop them
    async with RpcClient(sim.base_url) as client:
        with pytest.raises(InteractionRejected) as info:
            await RpcInteractionDelivery(client).deliver(sim.cascade_id, wrong)
    assert info.value.status == 500 and "input not registered" in info.value.message
    assert [str(s.key) for s in waiting(sim.steps())] == [str(gate.key)]  # still parked


async def test_interrupt_cancels_a_generating_reply(sim: Any) -> None:
    async with RpcClient(sim.base_url) as client:
        batches = RpcStreamSource(client).batches(sim.cascade_id)
        await anext(batches)  # the (empty) replay: we are subscribed before the turn starts
        await sim.submit_user_turn("write a long story")
        async for batch in batches:  # until the reply is visibly generating
            if any((s := parse_step(r)) and s.type == "PLANNER_RESPONSE" and s.status == "GENERATING"
                   and planner_text(s) for r in batch.steps):  # fmt: skip
                break
        await RpcInterrupter(client).interrupt(sim.cascade_id)
        await batches.aclose()  # type: ignore[attr-defined]
    await sim.wait_idle(timeout=10.0)
    planners = of_type(sim.steps(), "PLANNER_RESPONSE")
    assert [p.status for p in planners if p.status == "CANCELED"], [p.status for p in planners]
    assert all(len(planner_text(p)) < len(LONG_TEXT) for p in planners)


async def test_interrupt_does_not_free_a_parked_gate(sim: Any) -> None:
    gate = await _park_on_a_permission_gate(sim)
    async with RpcClient(sim.base_url) as client:
        await RpcInterrupter(client).interrupt(sim.cascade_id)
    await sim.wait_idle(timeout=10.0)
    assert [str(s.key) for s in waiting(sim.steps())] == [str(gate.key)]


# ------------------------------------------------------------------------------------- directory


async def test_directory_lists_the_cleared_and_the_new_cascade(sim: Any) -> None:
    first = sim.cascade_id
    await sim.submit_user_turn("say hello")
    await sim.wait_idle(timeout=10.0)
    second = await sim.clear()
    async with RpcClient(sim.base_url) as client:
        by_id = {c.cascade_id: c for c in await RpcCascadeDirectory(client).list_cascades()}
    assert {first, second} <= set(by_id)
    assert by_id[first].step_count >= 2
    assert by_id[first].last_user_input_time


async def test_directory_links_a_subagent_to_its_parent(sim: Any) -> None:
    await sim.submit_user_turn("start a subagent to review the code")
    await sim.wait_idle(timeout=10.0)
    async with RpcClient(sim.base_url) as client:
        summaries = await RpcCascadeDirectory(client).list_cascades()
    children = [c for c in summaries if c.parent_id == sim.cascade_id]
    assert len(children) == 1 and children[0].cascade_id != sim.cascade_id


# ------------------------------------------------------------------------------- faults (sources)


async def _say_hello_through(source: RpcStreamSource, sim: Any) -> list[Any]:
    got: list[Any] = []
    batches = source.batches(sim.cascade_id)
    got.append(await anext(batches))
    await sim.submit_user_turn("say hello")
    try:
        async with asyncio.timeout(10):
            async for batch in batches:
                got.append(batch)
                if (
                    not sim.is_running()
                    and all(s.settled for s in map(parse_step, sim.steps()) if s is not None)
                    and _done_keys(sim.steps()) <= _done_keys([r for b in got for r in b.steps])
                ):
                    break
    finally:
        await batches.aclose()  # type: ignore[attr-defined]
    return got


def _done_keys(raws: list[Any]) -> set[str]:
    return {str(s.key) for s in map(parse_step, raws) if s is not None and s.status == "DONE"}


async def test_stream_skips_a_malformed_frame_and_a_non_object_step(sim: Any) -> None:
    sim.faults.malformed_frame_once = True
    sim.faults.non_dict_step_once = True
    async with RpcClient(sim.base_url) as client:
        source = RpcStreamSource(client)
        got = await _say_hello_through(source, sim)
    assert {"malformed_frame", "non_dict_step"} <= set(sim.faults.fired)
    assert source.bad_frames >= 1
    assert all(isinstance(r, dict) for b in got for r in b.steps)


async def test_stream_cut_mid_frame_is_stream_broken(sim: Any) -> None:
    async with RpcClient(sim.base_url) as client:
        batches = RpcStreamSource(client).batches(sim.cascade_id)
        await anext(batches)
        sim.faults.cut_stream_once = True
        await sim.submit_user_turn("say hello")
        with pytest.raises(StreamBroken):
            async for _ in batches:
                pass
    assert "cut_stream" in sim.faults.fired


async def test_stalled_stream_while_running_is_stream_idle(sim: Any) -> None:
    async with RpcClient(sim.base_url) as client:
        batches = RpcStreamSource(client, idle_timeout=0.3, is_running=sim.is_running).batches(sim.cascade_id)
        await anext(batches)
        sim.faults.stall_stream = True
        await sim.submit_user_turn("run: pwd")  # parks on a gate: running, and silent
        with pytest.raises(StreamIdle):
            async for _ in batches:
                pass


async def test_restart_ends_the_stream_without_trailer(sim: Any) -> None:
    async def consume(batches: Any) -> None:
        async for _ in batches:
            pass

    async with RpcClient(sim.base_url) as client:
        batches = RpcStreamSource(client).batches(sim.cascade_id)
        await anext(batches)
        reader = asyncio.create_task(consume(batches))  # a live reader, as the driver has
        await sim.restart()
        with pytest.raises((StreamBroken, RpcUnreachable)):
            await reader


async def test_poll_503_burst_is_an_rpc_error_then_recovers(sim: Any) -> None:
    sim.faults.fail("GetCascadeTrajectorySteps", status=503, times=2)
    async with RpcClient(sim.base_url) as client:
        poll = RpcPollSource(client)
        for _ in range(2):
            with pytest.raises(RpcError) as info:
                await poll.read_steps(sim.cascade_id)
            assert info.value.status == 503
        assert await poll.read_steps(sim.cascade_id) == sim.steps()


async def test_stream_of_an_unknown_cascade_is_an_error(sim: Any) -> None:
    async with RpcClient(sim.base_url) as client:
        with pytest.raises(RpcError):
            async for _ in RpcStreamSource(client).batches("no-such-cascade"):
                pass
