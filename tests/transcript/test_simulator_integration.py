"""The simulator + TranscriptWriter + TranscriptTailSource: the tail sees the same completed steps
as ``GetCascadeTrajectorySteps`` for a scripted turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.transcript import TranscriptWriter
from agy_harness.adapters.transcript import TranscriptTailSource, is_completed, step_identity

from .helpers import Collector

TURNS = [
    "Say hello in one short sentence.",
    "autorun `ls -la` then list the directory and summarise.",
]


def identities(steps: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(step_identity(s), s["type"]) for s in steps if is_completed(s)}


@pytest.mark.parametrize("split_writes", [False, True])
async def test_the_tail_yields_the_polled_done_steps(tmp_path: Path, split_writes: bool) -> None:
    async with Simulator(profile="1.0.10", gate_timeout=None, pace=0.02) as sim:
        writer = TranscriptWriter(tmp_path, split_writes=split_writes, split_pause=0.005)
        writer.attach(sim)
        cascade_id = sim.cascade_id
        source = TranscriptTailSource(tmp_path, poll_interval=0.05)
        try:
            async with Collector(source, cascade_id) as c, RpcClient(sim.base_url) as client:
                poll = RpcPollSource(client)
                expected: set[tuple[str, str]] = set()
                for text in TURNS:
                    await sim.submit_user_turn(text)
                    await sim.wait_idle(timeout=5.0)
                    await asyncio.to_thread(writer.drain)
                    polled = await poll.read_steps(cascade_id)
                    expected = identities([s for s in polled if isinstance(s, dict)])
                    await c.until(lambda exp=expected: identities(c.steps) >= exp)  # type: ignore[misc]
                assert len(expected) >= 3
                assert identities(c.steps) == expected
                assert any(t == "CORTEX_STEP_TYPE_USER_INPUT" for _, t in expected)
                assert any(t == "CORTEX_STEP_TYPE_PLANNER_RESPONSE" for _, t in expected)
                assert any(t == "CORTEX_STEP_TYPE_RUN_COMMAND" for _, t in expected)
                assert any(t == "CORTEX_STEP_TYPE_LIST_DIRECTORY" for _, t in expected)
                # every step arrived exactly once (one file generation)
                assert len(c.steps) == len(identities(c.steps))
                for s in c.steps:
                    assert s["metadata"]["sourceTrajectoryStepInfo"]["cascadeId"] == cascade_id
        finally:
            writer.close()
