"""The StepSource contract: the same scripted conversation through every RPC step source ends in the
same set of DONE steps (by step key and type) as the simulator's own poll projection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
from agy_harness.core.steps import parse_step
from agy_harness.ports.protocols import StepSource

SourceFactory = Callable[[RpcClient], StepSource]
SOURCES: dict[str, SourceFactory] = {
    "stream": lambda client: RpcStreamSource(client, idle_timeout=5.0),
    "poll": lambda client: RpcPollSource(client, interval=0.02),
}
TURNS = ("say hello", "list the files in this directory", "thanks, that is all")

DoneSet = frozenset[tuple[str, str]]


def done_set(steps: Any) -> DoneSet:
    out = set()
    for raw in steps:
        step = parse_step(raw)
        if step is not None and step.status == "DONE":
            out.add((str(step.key), step.type))
    return frozenset(out)


class Collector:
    """Folds a source's batches into the latest view of each step."""

    def __init__(self) -> None:
        self.steps: dict[str, Any] = {}
        self.batches = 0
        self.changed = asyncio.Event()

    def apply(self, raws: tuple[Any, ...], snapshot: bool) -> None:
        if snapshot:
            self.steps = {}
        for raw in raws:
            step = parse_step(raw)
            if step is not None:
                self.steps[str(step.key)] = raw
        self.batches += 1
        self.changed.set()

    async def run(self, source: StepSource, cascade_id: str) -> None:
        async for batch in source.batches(cascade_id):
            assert batch.cascade_id == cascade_id and batch.source == source.name
            self.apply(batch.steps, batch.snapshot)

    async def wait_for(self, expected: DoneSet, timeout: float = 10.0) -> DoneSet:
        async with asyncio.timeout(timeout):
            while done_set(self.steps.values()) != expected:
                self.changed.clear()
                await self.changed.wait()
        return done_set(self.steps.values())


@contextlib.asynccontextmanager
async def collecting(source: StepSource, cascade_id: str) -> AsyncIterator[Collector]:
    collector = Collector()
    task = asyncio.create_task(collector.run(source, cascade_id))
    try:
        yield collector
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def run_conversation(sim: Any) -> DoneSet:
    for text in TURNS:
        await sim.submit_user_turn(text)
        await sim.wait_idle(timeout=10.0)
    return done_set(sim.steps())


@pytest.mark.parametrize("kind", sorted(SOURCES))
async def test_scripted_conversation_ends_in_the_simulators_done_steps(sim: Any, kind: str) -> None:
    async with RpcClient(sim.base_url) as client:
        source = SOURCES[kind](client)
        async with collecting(source, sim.cascade_id) as collector:
            expected = await run_conversation(sim)
            assert len(expected) >= 2 * len(TURNS)  # a USER_INPUT and at least one reply per turn
            assert await collector.wait_for(expected) == expected
    assert collector.batches >= 1


async def test_stream_and_poll_agree_on_one_conversation(sim: Any) -> None:
    async with RpcClient(sim.base_url) as client:
        stream, poll = SOURCES["stream"](client), SOURCES["poll"](client)
        async with (
            collecting(stream, sim.cascade_id) as via_stream,
            collecting(poll, sim.cascade_id) as via_poll,
        ):
            expected = await run_conversation(sim)
            assert await via_stream.wait_for(expected) == await via_poll.wait_for(expected)


@pytest.mark.parametrize("kind", sorted(SOURCES))
async def test_a_late_subscriber_gets_the_history_as_a_snapshot(sim: Any, kind: str) -> None:
    expected = await run_conversation(sim)
    async with RpcClient(sim.base_url) as client:
        batches = SOURCES[kind](client).batches(sim.cascade_id)
        first = await anext(batches)
        await batches.aclose()  # type: ignore[attr-defined]
    assert first.snapshot
    assert done_set(first.steps) == expected
