"""Regression tests for the transport stalls (issue #14): against the simulator, over real TLS.

* A leaked probe stream (``version_gate.stream_exists`` returned after the first frame without
  closing it) kept agy sending to it; on one HTTP/2 connection its bytes were never acknowledged,
  so after ~16 MB the connection's receive window was gone and the main stream stopped (until the
  20 s watchdog). Here: the probe is closed at the server, and a reply of ~21 MB of snapshots streams completely
  through the same client afterwards.
* A stream given up by its reader (the source cancelled on rotation, a watchdog restart) is closed
  at the server too.
* With more streams open on one client than an HTTP/2 connection allows (100), a unary call still
  gets its answer, and a call with a deadline raises at its deadline while the server still holds
  its answer back.

No timing asserts: each wait is for a condition, bounded only so that a regression fails instead
of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.errors import RpcTimeout
from agy_harness.adapters.rpc.sources import RpcStreamSource
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.version_gate import stream_exists

BOUND = 60.0  # seconds before a regression is declared a hang (never reached when it works)


async def eventually(condition: Callable[[], bool], what: str) -> None:
    try:
        async with asyncio.timeout(BOUND):
            while not condition():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"never happened: {what}") from None


def open_streams(sim: Simulator, cascade_id: str) -> int:
    """How many StreamAgentStateUpdates the simulator is serving for ``cascade_id``."""
    return len(sim._cascades[cascade_id].watchers)


def _text(step: dict[str, Any]) -> str:
    body = step.get("plannerResponse") or {}
    return str(body.get("modifiedResponse") or "")


async def test_a_leaked_probe_neither_stays_open_nor_stalls_the_session() -> None:
    size, frames = 64 * 1024, 640  # cumulative snapshots: ~21 MB on the wire, past the old 16 MB window
    async with Simulator(pace=0) as sim:
        cid = sim.cascade_id
        async with RpcClient(sim.base_url) as client:
            assert await stream_exists(client, cid)
            await eventually(lambda: open_streams(sim, cid) == 0, "the probe stream is closed at agy")

            cascade = sim._cascades[cid]
            step: dict[str, Any] = {
                "type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
                "status": "CORTEX_STEP_STATUS_GENERATING",
                "plannerResponse": {"response": "", "modifiedResponse": ""},
            }
            index = sim._append(cascade, step)
            received = 0
            longest = 0
            progress = asyncio.Event()

            async def read() -> None:
                nonlocal received, longest
                async for frame in client.stream("StreamAgentStateUpdates", {"conversationId": cid}):
                    received += len(frame.data)
                    assert frame.payload is not None
                    steps = frame.payload["update"]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"]
                    longest = max([longest, *(len(_text(s)) for s in steps)])
                    progress.set()
                    if longest >= size:
                        return

            reader = asyncio.create_task(read())
            await eventually(lambda: open_streams(sim, cid) == 1, "the main stream is open")
            piece = "x" * (size // frames)
            try:
                async with asyncio.timeout(BOUND):
                    for i in range(frames + 1):  # one frame per change: wait until the reader has it
                        text = piece * (i + 1) if i < frames else "x" * size
                        step["plannerResponse"]["response"] = text
                        step["plannerResponse"]["modifiedResponse"] = text
                        sim._changed(cascade, index)
                        while longest < len(text) and not reader.done():
                            progress.clear()
                            await progress.wait()
                    await reader
            finally:
                reader.cancel()
                with contextlib.suppress(BaseException):
                    await reader
    assert longest == size  # the whole reply arrived through the one client
    assert received > 16 * 1024 * 1024  # ... and more than the old connection window


async def test_a_stream_given_up_by_its_reader_is_closed_at_the_server() -> None:
    async with Simulator(pace=0) as sim, RpcClient(sim.base_url) as client:
        cid = sim.cascade_id
        source = RpcStreamSource(client)
        batches = source.batches(cid)
        first = await anext(batches)
        assert first.snapshot
        assert open_streams(sim, cid) == 1
        await batches.aclose()  # what a rotation or a watchdog restart does to the old source
        await eventually(lambda: open_streams(sim, cid) == 0, "the abandoned stream is closed at agy")

        consumer = asyncio.create_task(anext(source.batches(cid)))
        await consumer
        await eventually(lambda: open_streams(sim, cid) == 1, "a second stream is open")
        # a reader task cancelled while it waits for a frame (the harness cancelling a source)
        waiting = asyncio.create_task(_drain(source, cid))
        await eventually(lambda: open_streams(sim, cid) == 2, "a third stream is open")
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await eventually(lambda: open_streams(sim, cid) == 1, "the cancelled stream is closed at agy")


async def _drain(source: RpcStreamSource, cascade_id: str) -> None:
    async for _batch in source.batches(cascade_id):
        pass


@pytest.mark.parametrize("streams", [120])
async def test_calls_meet_their_deadline_with_many_streams_open(streams: int) -> None:
    async with Simulator(pace=0) as sim, RpcClient(sim.base_url) as client:
        cascades = [await sim.start_cascade() for _ in range(streams)]
        replayed: set[str] = set()

        async def follow(cid: str) -> None:
            async for _frame in client.stream("StreamAgentStateUpdates", {"conversationId": cid}):
                replayed.add(cid)

        readers = [asyncio.create_task(follow(c)) for c in cascades]
        try:
            await eventually(lambda: len(replayed) == streams, "every stream got its replay")
            async with asyncio.timeout(BOUND):
                assert await client.call("Heartbeat", {}, timeout=5.0) == {}

            # a call whose answer is held back: it raises at its own deadline, before the answer exists
            sim.faults.delay, sim.faults.delay_methods = BOUND, {"GetAvailableModels"}
            async with asyncio.timeout(BOUND):
                with pytest.raises(RpcTimeout):
                    await client.call("GetAvailableModels", {}, timeout=0.3)
            sim.faults.reset()
            async with asyncio.timeout(BOUND):
                assert "response" in await client.call("GetAvailableModels", {}, timeout=5.0)
        finally:
            for r in readers:
                r.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
