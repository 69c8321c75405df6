"""A poll source followed in the background, as the harness reads it (shared by tests/rpc and tests/safety)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.ports.protocols import StepBatch


@asynccontextmanager
async def polled(
    client: RpcClient, cascade_id: str, *, within: float
) -> AsyncIterator[tuple[RpcPollSource, list[StepBatch]]]:
    """``(source, batches)``: an :class:`RpcPollSource` at a 0.01 s interval whose every batch a reader
    appends to ``batches``, entered once the first batch has arrived (within ``within`` seconds); the
    reader is cancelled on exit."""
    source = RpcPollSource(client, interval=0.01)
    batches: list[StepBatch] = []

    async def follow() -> None:
        async for batch in source.batches(cascade_id):
            batches.append(batch)

    task = asyncio.ensure_future(follow())
    try:
        async with asyncio.timeout(within):
            while not batches:
                await asyncio.sleep(0.01)
        yield source, batches
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
