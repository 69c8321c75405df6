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


async def test_an_idle_conversation_is_not_read_again_and_new_steps_still_arrive(sim: Any) -> None:
    c = sim._cascade(None)
    await sim.send_agent_message(sim.cascade_id, "a long settled step " * 50_000)  # 1 MB, DONE
    async with RpcClient(sim.base_url) as client:
        source = RpcPollSource(client, interval=0.01)
        batches: list[StepBatch] = []

        async def follow() -> None:
            async for batch in source.batches(sim.cascade_id):
                batches.append(batch)

        task = asyncio.ensure_future(follow())
        try:
            async with asyncio.timeout(20):
                while not batches:
                    await asyncio.sleep(0.01)
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
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
