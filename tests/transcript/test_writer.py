"""TranscriptWriter (the simulator's legacy transcript) against a fake subscribable simulator."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator.transcript import TranscriptWriter
from agy_harness.adapters.transcript import TranscriptTailSource, line_to_step
from tests.core.fixtures import fixture

from .helpers import Collector, step

Callback = Callable[[str, dict[str, Any]], None]


class FakeSim:
    def __init__(self) -> None:
        self.callbacks: list[Callback] = []

    def subscribe(self, cb: Callback) -> Callable[[], None]:
        self.callbacks.append(cb)
        return lambda: self.callbacks.remove(cb)

    def emit(self, cascade_id: str, s: dict[str, Any]) -> None:
        for cb in list(self.callbacks):
            cb(cascade_id, copy.deepcopy(s))


def with_status(s: dict[str, Any], status: str) -> dict[str, Any]:
    s = copy.deepcopy(s)
    s["status"] = f"CORTEX_STEP_STATUS_{status}"
    return s


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_writes_each_completed_step_once(tmp_path: Path) -> None:
    sim = FakeSim()
    writer = TranscriptWriter(tmp_path)
    unsubscribe = writer.attach(sim)
    user = fixture("user_input")
    run = fixture("run_command_done")
    sim.emit("c1", user)
    sim.emit("c1", with_status(run, "PENDING"))
    sim.emit("c1", fixture("run_command_waiting"))
    sim.emit("c1", with_status(run, "RUNNING"))
    assert [x["type"] for x in lines(writer.path_for("c1"))] == ["USER_INPUT"]
    sim.emit("c1", run)
    sim.emit("c1", run)  # a repeated DONE snapshot
    error = fixture("run_command_error")
    error["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 9  # a re-asked gate that timed out
    sim.emit("c1", error)
    sim.emit("c1", with_status(run, "ERROR"))  # the same step again: never written twice
    sim.emit("c2", fixture("planner_response_text"))
    got = lines(writer.path_for("c1"))
    assert [f"{x['type']}:{x['status']}:{x['step_index']}" for x in got] == [
        "USER_INPUT:DONE:0",
        "RUN_COMMAND:DONE:6",
        "RUN_COMMAND:ERROR:9",
    ]
    assert [x["type"] for x in lines(writer.path_for("c2"))] == ["PLANNER_RESPONSE"]
    back = line_to_step(got[1], cascade_id="c1")
    assert back is not None and back["runCommand"] == run["runCommand"]
    unsubscribe()
    sim.emit("c1", step(99))
    assert len(lines(writer.path_for("c1"))) == 3
    writer.close()


def test_non_steps_are_ignored(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path)
    writer.on_step("c", {"status": "CORTEX_STEP_STATUS_DONE"})
    writer.on_step("c", "nope")  # type: ignore[arg-type]
    assert not writer.path_for("c").exists()


async def test_split_writes_are_read_whole_by_the_tail(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sim = FakeSim()
    writer = TranscriptWriter(tmp_path, split_writes=True, split_pause=0.03)
    writer.attach(sim)
    source = TranscriptTailSource(tmp_path, poll_interval=0.005, use_watchfiles=False)
    with caplog.at_level(logging.WARNING, logger="agy_harness.adapters.transcript.tail"):
        async with Collector(source, "c1") as c:
            for i in range(6):
                sim.emit("c1", step(i, f"ünïcödé {i} ☃"))
            await asyncio.to_thread(writer.drain)
            await c.until(lambda: len(c.steps) == 6)
    writer.close()
    assert [s["plannerResponse"]["response"] for s in c.steps] == [f"ünïcödé {i} ☃" for i in range(6)]
    assert caplog.records == []
    assert writer.lines_written == 6
