"""Step sources against a scripted TLS HTTP/2 stub: frame handling, idle watchdog, poll change detection."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agy_harness.adapters.rpc.client import RpcClient, StreamProgress
from agy_harness.adapters.rpc.codec import FLAG_END_STREAM, EnvelopeDecoder, encode_envelope
from agy_harness.adapters.rpc.errors import RpcError, StreamBroken, StreamIdle
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource, _IdleWatch
from agy_harness.ports.protocols import SourceUnavailable, StepBatch, StepSnapshot, StepSource

from .stub import Reply, Request, StubServer, const

RUNNING, IDLE = "CASCADE_RUN_STATUS_RUNNING", "CASCADE_RUN_STATUS_IDLE"


def step(i: int, status: str = "DONE") -> dict[str, Any]:
    return {
        "type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
        "status": f"CORTEX_STEP_STATUS_{status}",
        "metadata": {"sourceTrajectoryStepInfo": {"trajectoryId": "t", "stepIndex": i}},
    }


def update(steps: list[Any], status: str = RUNNING) -> bytes:
    return encode_envelope(
        {"update": {"conversationId": "c", "status": status,
                    "mainTrajectoryUpdate": {"stepsUpdate": {"indices": [], "steps": steps}}}}
    )  # fmt: skip


TRAILER = encode_envelope({}, FLAG_END_STREAM)


def serve_stream(stub: StubServer, *items: bytes | float) -> None:
    """Route StreamAgentStateUpdates to a body of envelopes; a float item sleeps that long."""

    async def handler(_req: Request) -> Reply:
        async def gen() -> AsyncIterator[bytes]:
            for item in items:
                if isinstance(item, float):
                    await asyncio.sleep(item)
                else:
                    yield item

        return Reply(200, gen(), "application/connect+json")

    stub.routes["StreamAgentStateUpdates"] = handler


async def drain(source: StepSource, cascade_id: str = "c") -> list[StepBatch]:
    return [b async for b in source.batches(cascade_id)]


def test_sources_satisfy_the_ports() -> None:
    client = RpcClient("https://127.0.0.1:1")
    assert isinstance(RpcStreamSource(client), StepSource)
    assert isinstance(RpcPollSource(client), StepSource)
    assert isinstance(RpcPollSource(client), StepSnapshot)
    assert (RpcStreamSource.name, RpcStreamSource.live, RpcPollSource.name, RpcPollSource.live) == (
        "stream", True, "poll", False)  # fmt: skip


async def test_stream_first_frame_is_snapshot_then_increments(stub: StubServer) -> None:
    serve_stream(
        stub, update([step(0), step(1)]), update([step(2, "GENERATING")]), update([step(2)]), TRAILER
    )
    async with RpcClient(stub.base_url) as client:
        batches = await drain(RpcStreamSource(client))
    assert [b.snapshot for b in batches] == [True, False, False]
    assert [[s["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] for s in b.steps] for b in batches] == [
        [0, 1], [2], [2]]  # fmt: skip
    assert {b.source for b in batches} == {"stream"} and {b.cascade_id for b in batches} == {"c"}
    (req,) = stub.requests
    assert EnvelopeDecoder().feed(req.body)[0].payload == {"conversationId": "c"}


async def test_stream_skips_bad_frames_and_non_object_steps(stub: StubServer) -> None:
    serve_stream(
        stub,
        update([step(0)]),
        b"\x00\x00\x00\x00\x04nope",
        encode_envelope({"notAnUpdate": 1}),
        update([step(1), "junk", 7, None]),
        update([], status=IDLE),  # status-only frame: no batch
        TRAILER,
    )
    async with RpcClient(stub.base_url) as client:
        source = RpcStreamSource(client)
        batches = await drain(source)
    assert [len(b.steps) for b in batches] == [1, 1]
    assert batches[1].steps[0] == step(1)
    assert source.bad_frames == 2 and source.last_status == IDLE


async def test_stream_empty_first_frame_is_still_a_snapshot(stub: StubServer) -> None:
    serve_stream(stub, update([], status=IDLE), TRAILER)
    async with RpcClient(stub.base_url) as client:
        (batch,) = await drain(RpcStreamSource(client))
    assert batch.snapshot and batch.steps == ()


async def test_stream_404_is_source_unavailable(stub: StubServer) -> None:
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(SourceUnavailable):
            await drain(RpcStreamSource(client))


async def test_stream_broken_propagates(stub: StubServer) -> None:
    serve_stream(stub, update([step(0)]))
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(StreamBroken):
            await drain(RpcStreamSource(client))


async def test_idle_watchdog_fires_while_running(stub: StubServer) -> None:
    serve_stream(stub, update([step(0)], status=RUNNING), 3.0, TRAILER)
    got: list[StepBatch] = []
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(StreamIdle) as info:
            async for batch in RpcStreamSource(client, idle_timeout=0.2).batches("c"):
                got.append(batch)
    assert len(got) == 1 and info.value.cascade_id == "c"


async def test_idle_watchdog_waits_while_a_frame_is_arriving(stub: StubServer) -> None:
    """A frame whose bytes trickle in for longer than the idle timeout, a chunk within each timeout,
    is a frame arriving, not an idle stream (the cascade runs all along)."""
    big = update([step(1)], status=RUNNING)
    pieces: list[bytes | float] = []
    for i in range(0, len(big), 40):
        pieces += [big[i : i + 40], 0.05]
    serve_stream(stub, update([step(0)], status=RUNNING), 0.05, *pieces, TRAILER)
    assert (
        sum(p for p in pieces if isinstance(p, float)) > 0.3
    )  # the whole frame takes longer than the timeout
    async with RpcClient(stub.base_url) as client:
        batches = await drain(RpcStreamSource(client, idle_timeout=0.15))
    assert [b.steps[0]["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] for b in batches] == [0, 1]


async def test_idle_watchdog_times_each_wait_from_its_start(stub: StubServer) -> None:
    """Frames for longer than the idle timeout in all, each within it, then silence while the cascade
    runs: every frame is delivered, then StreamIdle (one timer watches the whole stream)."""
    pieces: list[bytes | float] = []
    for i in range(8):
        pieces += [update([step(i)], status=RUNNING), 0.05]
    serve_stream(stub, *pieces, 3.0, TRAILER)
    got: list[StepBatch] = []
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(StreamIdle):
            async for batch in RpcStreamSource(client, idle_timeout=0.15).batches("c"):
                got.append(batch)
    assert len(got) == 8


async def test_a_consumer_slower_than_the_idle_timeout_is_not_an_idle_stream(stub: StubServer) -> None:
    """The time the consumer spends on a batch is not the stream's silence: each wait for a frame
    has the whole idle timeout."""
    frames = [update([step(i)], status=RUNNING) for i in range(3)]
    serve_stream(stub, frames[0], 0.01, frames[1], 0.01, frames[2], TRAILER)
    got: list[StepBatch] = []
    async with RpcClient(stub.base_url) as client:
        async for batch in RpcStreamSource(client, idle_timeout=0.1).batches("c"):
            got.append(batch)
            await asyncio.sleep(0.3)  # busy with the batch for three timeouts
    assert len(got) == 3


async def test_a_held_loop_is_not_an_idle_stream() -> None:
    """A loop held past the idle timeout (a big snapshot decoded, a loaded machine) while agy's bytes
    wait unread in the socket is not agy's silence: the watchdog counts only time the loop was free
    to read them (it fired at its first look after the hold, before: StreamIdle, the stream dropped,
    with the frame already there)."""
    loop = asyncio.get_running_loop()
    progress = StreamProgress()
    watch = _IdleWatch(0.2, progress, lambda: True)
    arrived: asyncio.Future[None] = loop.create_future()

    def bytes_read() -> None:
        progress.received += 100
        arrived.set_result(None)

    def held() -> None:
        time.sleep(0.6)  # three idle timeouts with the loop held
        loop.call_soon(loop.call_soon, bytes_read)  # once free: the socket's callback, then the reader

    loop.call_later(0.02, held)
    watch.begin()
    try:
        await arrived
    finally:
        watch.task = None
        watch.close()
    assert not watch.fired


async def test_idle_watchdog_waits_while_idle(stub: StubServer) -> None:
    serve_stream(stub, update([step(0)], status=IDLE), 0.5, update([step(1)], status=IDLE), TRAILER)
    async with RpcClient(stub.base_url) as client:
        batches = await drain(RpcStreamSource(client, idle_timeout=0.1))
    assert len(batches) == 2


async def test_idle_watchdog_uses_the_drivers_predicate(stub: StubServer) -> None:
    serve_stream(stub, update([step(0)], status=IDLE), 3.0, TRAILER)
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(StreamIdle):
            await drain(RpcStreamSource(client, idle_timeout=0.2, is_running=lambda: True))


async def test_abandoning_a_stream_early_closes_it(stub: StubServer) -> None:
    serve_stream(stub, update([step(0)]), 3.0, TRAILER)
    async with RpcClient(stub.base_url) as client:
        it = RpcStreamSource(client).batches("c")
        first = await anext(it)
        await it.aclose()  # type: ignore[attr-defined]
        assert first.snapshot
        stub.routes["Heartbeat"] = const(200, b"{}")
        assert await client.call("Heartbeat", {}) == {}  # the pooled connection is still usable


# ------------------------------------------------------------------------------------------- poll


def serve_polls(stub: StubServer, answers: list[bytes]) -> None:
    async def handler(_req: Request) -> Reply:
        return Reply(200, answers.pop(0) if len(answers) > 1 else answers[0])

    stub.routes["GetCascadeTrajectorySteps"] = handler


async def test_poll_yields_only_on_change(stub: StubServer) -> None:
    a = json.dumps({"steps": [step(0, "GENERATING")]}).encode()
    b = json.dumps({"steps": [step(0)]}).encode()
    serve_polls(stub, [a, a, a, b, b, b])
    async with RpcClient(stub.base_url) as client:
        source = RpcPollSource(client, interval=0.01)
        it = source.batches("c")
        first, second = await anext(it), await anext(it)
        await it.aclose()  # type: ignore[attr-defined]
    assert first.snapshot and second.snapshot and first.source == "poll"
    assert first.steps == (step(0, "GENERATING"),) and second.steps == (step(0),)
    assert source.polls == 4  # a, a, a (unchanged: not yielded), b
    assert json.loads(stub.requests[0].body) == {"cascadeId": "c"}


async def test_read_steps_tolerates_shapes(stub: StubServer) -> None:
    serve_polls(stub, [b"{}", b'{"steps": 5}', b'{"steps": [1, {"type": "x"}]}', b'{"steps": []}'])
    async with RpcClient(stub.base_url) as client:
        source = RpcPollSource(client)
        assert [await source.read_steps("c") for _ in range(4)] == [[], [], [{"type": "x"}], []]


async def test_poll_404_is_source_unavailable(stub: StubServer) -> None:
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(SourceUnavailable):
            await RpcPollSource(client).read_steps("c")
        with pytest.raises(SourceUnavailable):
            await drain(RpcPollSource(client))


async def test_poll_server_error_propagates(stub: StubServer) -> None:
    stub.routes["GetCascadeTrajectorySteps"] = const(503, b"busy")
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(RpcError) as info:
            await RpcPollSource(client).read_steps("c")
    assert info.value.status == 503 and info.value.code == "unavailable"


async def test_stream_reads_a_data_frame_without_the_update_envelope(stub: StubServer) -> None:
    """The core reads a bare update; the stream used to drop it as "no update object" (the reference
    reads it: omnigent 0.19.1 rpc.py, "if a future agy ever drops the envelope")."""
    bare = {
        "conversationId": "c",
        "status": RUNNING,
        "mainTrajectoryUpdate": {"stepsUpdate": {"steps": [step(0)]}},
    }
    serve_stream(stub, encode_envelope(bare), update([step(1)]), TRAILER)
    async with RpcClient(stub.base_url) as client:
        source = RpcStreamSource(client)
        batches = await drain(source)
    assert [list(b.steps) for b in batches] == [[step(0)], [step(1)]] and batches[0].snapshot
    assert source.bad_frames == 0
