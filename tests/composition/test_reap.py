"""reap: waits for cancelled tasks without swallowing a cancel of the task that waits."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.ports.tasks import reap


async def test_a_cancel_of_the_waiter_propagates() -> None:
    stubborn_started = asyncio.Event()

    async def stubborn() -> None:  # takes a while to end after its cancel
        stubborn_started.set()
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.shield(asyncio.sleep(0.2))

    async def closer(task: asyncio.Task[None]) -> str:
        task.cancel()
        await reap(task)
        return "went on"  # the old suppress(BaseException) pattern got here

    inner = asyncio.ensure_future(stubborn())
    await stubborn_started.wait()
    outer = asyncio.ensure_future(closer(inner))
    await asyncio.sleep(0.05)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    await asyncio.wait({inner})


async def test_the_caller_itself_is_not_waited_for() -> None:
    async def withdraws_itself() -> str:
        me = asyncio.current_task()
        assert me is not None
        await reap(me)  # e.g. an ask that withdraws its own gate
        return "ended"

    assert await asyncio.wait_for(withdraws_itself(), 5) == "ended"
