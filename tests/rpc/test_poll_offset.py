"""An idle conversation costs the poll (near) nothing, however large its steps (issue #35, case 9).

The poll asks agy only for the steps past the settled ones it already holds (``stepOffset``): an idle
conversation's answers hold no step at all, so a 33 MB step is neither re-read nor re-decoded nor
re-fed; a step that can still change (WAITING, RUNNING) is read again each poll.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.adapters.simulator.hostile import flood_gates
from agy_harness.ports.protocols import StepBatch

from .helpers import polled


async def test_an_idle_conversation_is_not_read_again_and_new_steps_still_arrive(sim: Any) -> None:
    c = sim._cascade(None)
    await sim.send_agent_message(sim.cascade_id, "a long settled step " * 50_000)  # 1 MB, DONE
    async with (
        RpcClient(sim.base_url) as client,
        polled(client, sim.cascade_id, within=20) as (source, batches),
    ):
        async with asyncio.timeout(20):
            sent, polls = c.steps_sent, source.polls
            while source.polls < polls + 20:
                await asyncio.sleep(0.01)
        assert c.steps_sent == sent  # 20 polls of an idle conversation: not one step sent again
        assert len(batches) == 1  # nor re-fed
        # a new step that can still change (WAITING) arrives, and is read again each poll
        [index] = flood_gates(sim, 1)
        async with asyncio.timeout(20):
            while len(batches[-1].steps) <= index:
                await asyncio.sleep(0.01)
            sent, polls = c.steps_sent, source.polls
            while source.polls < polls + 5:
                await asyncio.sleep(0.01)
        assert c.steps_sent >= sent + 4  # the WAITING step, read on every poll
        assert list(batches[-1].steps) == sim.steps()


class _Clock:
    """The poll's clock: every sleep it asks for, recorded (and yielded to the loop at once)."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.park_at = 0  # the sleep that never ends (the reader stops there until cancelled); 0: none

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.park_at and len(self.sleeps) >= self.park_at:
            await asyncio.Event().wait()  # no read after the sleeps the test counts, however slow the loop
        await asyncio.sleep(0.001)


async def test_a_quiet_poll_slows_down_and_a_new_reader_goes_on_where_the_last_stopped(sim: Any) -> None:
    """A conversation waiting on a gate is re-read each poll (its WAITING step can change): with a
    4.5 MiB command in it, one poll cost ~150 ms of CPU, and the harness's returns to the stream
    started a new poll reader each time, reading the whole list anew at the first interval (idle,
    stream down: 24% of a CPU). Now the interval grows while polls change nothing (up to 8x, reset
    by a change), and a new reader goes on from the last snapshot and the quiet count.
    (Before: every sleep was the interval, and a new reader read every step again.)"""
    c = sim._cascade(None)
    for i in range(5):  # 5 MB of settled steps
        await sim.send_agent_message(sim.cascade_id, f"{i} long settled step " * 50_000)
    flood_gates(sim, 1)  # a step that can still change: read again each poll
    async with RpcClient(sim.base_url) as client:
        clock = _Clock()
        source = RpcPollSource(client, interval=0.01, clock=clock)

        async def first_batch_then(polls: int) -> StepBatch:
            clock.park_at = polls
            batches = source.batches(sim.cascade_id)
            batch = await anext(batches)
            task = asyncio.ensure_future(anext(batches))  # it polls on, changing nothing
            try:
                async with asyncio.timeout(30):
                    while len(clock.sleeps) < polls:
                        await asyncio.sleep(0.005)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            return batch

        await first_batch_then(30)
        quiet = clock.sleeps[:30]
        assert quiet[:3] == [0.01] * 3 and max(quiet) == 0.08  # slower and slower, up to 8x
        assert quiet == sorted(quiet)
        sent, clock.sleeps = c.steps_sent, []
        again = await first_batch_then(3)  # the harness tried the stream, and falls back to the poll
        assert list(again.steps) == sim.steps()  # a new reader gets the snapshot first
        assert c.steps_sent - sent <= 3  # only the WAITING step, each read (not the settled ones)
        assert clock.sleeps[:3] == [0.08] * 3  # still quiet: no reading at the first interval again
        flood_gates(sim, 1)  # a change: the interval is back to the first
        clock.sleeps = []
        changed = await first_batch_then(2)
        assert len(changed.steps) == len(sim.steps()) and clock.sleeps[0] == 0.01
