"""What a decided step ran, read once (composition/service/settled_runs.py): readers asking at the same
moment share one read; a settled step's command line is remembered, an unsettled one never (the next
reader reads again); a read that fails fails every reader waiting for it and is not remembered; a
reader whose read is cancelled leaves the others to read for themselves."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agy_harness.composition.service.settled_runs import SettledRuns
from tests.core.fixtures import fixture

CASCADE = "c"


def step(status: str = "DONE", line: str = "pwd") -> tuple[dict[str, Any], str, int]:
    raw = fixture("run_command_waiting")
    raw["status"] = f"CORTEX_STEP_STATUS_{status}"
    raw["runCommand"]["commandLine"] = line
    where = raw["metadata"]["sourceTrajectoryStepInfo"]
    return raw, where["trajectoryId"], where["stepIndex"]


class HeldSnapshot:
    """agy's steps from an index on; each read waits until ``go`` is set, and is counted."""

    def __init__(self, steps: list[Any]) -> None:
        self.steps = steps
        self.go = asyncio.Event()
        self.go.set()
        self.reads = 0
        self.fail: Exception | None = None

    async def read_steps(self, cascade_id: str) -> list[Any]:
        self.reads += 1
        await self.go.wait()
        if self.fail is not None:
            raise self.fail
        return list(self.steps)

    async def read_steps_from(self, cascade_id: str, offset: int) -> list[Any]:
        return [
            s
            for s in await self.read_steps(cascade_id)
            if s["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] >= offset
        ]


async def test_readers_at_the_same_moment_share_one_read_and_a_settled_step_is_remembered() -> None:
    raw, trajectory, index = step()
    snap = HeldSnapshot([raw])
    runs = SettledRuns(snap)
    snap.go.clear()
    both = asyncio.gather(runs.ran(CASCADE, trajectory, index), runs.ran(CASCADE, trajectory, index))
    await asyncio.sleep(0.01)
    snap.go.set()
    assert list(await both) == ["pwd", "pwd"] and snap.reads == 1
    assert await runs.ran(CASCADE, trajectory, index) == "pwd" and snap.reads == 1  # settled: remembered


async def test_a_step_not_settled_is_read_again() -> None:
    raw, trajectory, index = step("RUNNING")
    snap = HeldSnapshot([raw])
    runs = SettledRuns(snap)
    assert await runs.ran(CASCADE, trajectory, index) is None
    assert snap.reads == 2  # from the step on, then the whole conversation: not settled in either
    raw["status"] = "CORTEX_STEP_STATUS_DONE"
    raw["runCommand"]["commandLine"] = "pwd -P"
    assert await runs.ran(CASCADE, trajectory, index) == "pwd -P" and snap.reads == 3


async def test_a_failed_read_fails_its_waiters_and_is_not_remembered() -> None:
    raw, trajectory, index = step()
    snap = HeldSnapshot([raw])
    snap.fail = ConnectionError("agy is unreachable")
    runs = SettledRuns(snap)
    snap.go.clear()
    both = asyncio.gather(
        runs.ran(CASCADE, trajectory, index), runs.ran(CASCADE, trajectory, index), return_exceptions=True
    )
    await asyncio.sleep(0.01)
    snap.go.set()
    assert [type(e) for e in await both] == [ConnectionError, ConnectionError] and snap.reads == 1
    snap.fail = None
    assert await runs.ran(CASCADE, trajectory, index) == "pwd" and snap.reads == 2


async def test_a_cancelled_reader_leaves_the_waiting_one_to_read() -> None:
    raw, trajectory, index = step()
    snap = HeldSnapshot([raw])
    runs = SettledRuns(snap)
    snap.go.clear()
    first = asyncio.create_task(runs.ran(CASCADE, trajectory, index))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(runs.ran(CASCADE, trajectory, index))
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    snap.go.set()
    assert await second == "pwd" and snap.reads == 2  # (the cancelled read, then its own)
