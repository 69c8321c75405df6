"""One GetAllCascadeTrajectories per agy at a time, shared by the sessions on it (issue #14)."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.adapters.rpc.actions import RpcCascadeDirectory
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.shared_listing import shared_listing
from agy_harness.adapters.simulator import Simulator
from agy_harness.ports.protocols import CascadeSummary


async def test_concurrent_listings_share_one_call_and_each_gets_its_own_list() -> None:
    calls = 0
    release = asyncio.Event()

    async def fetch() -> list[CascadeSummary]:
        nonlocal calls
        calls += 1
        await release.wait()
        return [CascadeSummary(cascade_id="a", status="CASCADE_RUN_STATUS_IDLE")]

    waiters = [asyncio.create_task(shared_listing("k1", fetch)) for _ in range(50)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*waiters)
    assert calls == 1
    assert all(r == results[0] for r in results) and len({id(r) for r in results}) == 50
    assert await shared_listing("k1", fetch) == results[0]  # a later call is a new call
    assert calls == 2


async def test_a_failure_reaches_every_waiter_and_is_not_kept() -> None:
    outcomes = [ConnectionError("agy is down"), None]

    async def fetch() -> list[CascadeSummary]:
        await asyncio.sleep(0)
        error = outcomes.pop(0)
        if error is not None:
            raise error
        return []

    waiters = [asyncio.create_task(shared_listing("k2", fetch)) for _ in range(3)]
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)
    assert await shared_listing("k2", fetch) == []


async def test_one_waiter_cancelled_does_not_cancel_the_others() -> None:
    release = asyncio.Event()

    async def fetch() -> list[CascadeSummary]:
        await release.wait()
        return []

    first = asyncio.create_task(shared_listing("k3", fetch))
    second = asyncio.create_task(shared_listing("k3", fetch))
    await asyncio.sleep(0)
    first.cancel()
    release.set()
    assert await second == []
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_sessions_on_one_agy_share_the_listing_over_rpc() -> None:
    async with Simulator(pace=0) as sim:
        clients = [RpcClient(sim.base_url) for _ in range(10)]
        try:
            before = sim.calls.count("GetAllCascadeTrajectories")
            listings = await asyncio.gather(*(RpcCascadeDirectory(c).list_cascades() for c in clients))
            assert sim.calls.count("GetAllCascadeTrajectories") == before + 1
            assert all(sim.cascade_id in {s.cascade_id for s in listing} for listing in listings)
            unshared = RpcCascadeDirectory(clients[0], share=False)
            await asyncio.gather(unshared.list_cascades(), unshared.list_cascades())
            assert sim.calls.count("GetAllCascadeTrajectories") == before + 3
        finally:
            for c in clients:
                await c.aclose()
