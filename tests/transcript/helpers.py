"""Shared helpers for the transcript tests: synthetic lines, a file appender and an async collector."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from agy_harness.adapters.transcript.format import encode_line, step_to_line
from agy_harness.ports.protocols import StepBatch, StepSource

TRAJ = "traj-1"


def step(index: int, text: str = "", *, step_type: str = "PLANNER_RESPONSE") -> dict[str, Any]:
    body_key = "plannerResponse" if step_type == "PLANNER_RESPONSE" else "checkpoint"
    return {
        "type": f"CORTEX_STEP_TYPE_{step_type}",
        "status": "CORTEX_STEP_STATUS_DONE",
        "metadata": {
            "executionId": "exec-1",
            "createdAt": "2026-01-01T00:00:00Z",
            "sourceTrajectoryStepInfo": {"trajectoryId": TRAJ, "stepIndex": index, "cascadeId": "c"},
        },
        body_key: {"response": text or f"step {index}"},
    }


def line_bytes(index: int, text: str = "") -> bytes:
    line = step_to_line(step(index, text))
    assert line is not None
    return encode_line(line)


def append(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        fh.write(data)
        fh.flush()


def indices(steps: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> list[int]:
    return [s["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] for s in steps]


class Collector:
    """Runs ``source.batches(cascade_id)`` in a task and keeps every batch."""

    def __init__(self, source: StepSource, cascade_id: str) -> None:
        self.source = source
        self.cascade_id = cascade_id
        self.batches: list[StepBatch] = []
        self._task: asyncio.Task[None] | None = None
        self._iterator: AsyncIterator[StepBatch] | None = None

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [s for b in self.batches for s in b.steps]

    async def __aenter__(self) -> Collector:
        self._iterator = self.source.batches(self.cascade_id)
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        assert self._iterator is not None
        async for batch in self._iterator:
            self.batches.append(batch)

    async def until(self, cond: Callable[[], bool], timeout: float = 5.0) -> None:
        """Wait until ``cond()`` holds; fail (not a timing assert: a bound on a hang) otherwise."""
        async with asyncio.timeout(timeout):
            while not cond():
                assert self._task is not None
                if self._task.done():
                    self._task.result()
                    raise AssertionError("the source ended")
                await asyncio.sleep(0.01)

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self._iterator is not None and hasattr(self._iterator, "aclose"):
            await self._iterator.aclose()
