"""The file cursor store against a real SIGKILL: a harness killed mid-attach and started again
delivers every event, and repeats at most the one delivery the kill caught between the consumer's
acceptance and the journal's record (the journal records each delivery as it is accepted, not once
per batch: a batch-sized record would repeat everything the batch had delivered). Once with the
emitter fed the history (``killed_attach``), once end to end: ``open_session`` on a simulator serving
it, over its stream (``killed_session``)."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.recording import load_recording
from tests.core.fixtures import REPO, TRAJ, fixture
from tests.store.killed_attach import history

STEPS = 600
PAUSE = 0.004  # the consumer takes 4 ms a delivery: the kill lands mid-attach


def run(directory: Path, sink: Path) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "tests.store.killed_attach",
        str(directory),
        str(sink),
        str(STEPS),
        str(PAUSE),
    ]
    return subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE)


def lines(sink: Path) -> list[tuple[str, str]]:
    if not sink.exists():
        return []
    return [tuple(line.split(" ", 1)) for line in sink.read_text().splitlines()]  # type: ignore[misc]


def test_a_harness_killed_mid_attach_repeats_at_most_the_delivery_in_flight(tmp_path: Path) -> None:
    clean = tmp_path / "clean.txt"
    assert run(tmp_path / "clean", clean).wait(timeout=60) == 0
    expected = lines(clean)
    assert len({k for k, _ in expected}) > STEPS // 2  # most steps deliver something

    sink = tmp_path / "sink.txt"
    for kill_after in (len(expected) // 5, len(expected) // 2):  # killed twice, at two points
        child = run(tmp_path / "cursor", sink)
        start = len(lines(sink))
        deadline = time.monotonic() + 60
        while len(lines(sink)) < start + kill_after // 2 and child.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert child.poll() is None, "the attach ended before the kill"
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    last = run(tmp_path / "cursor", sink)
    assert last.wait(timeout=60) == 0, last.stderr.read() if last.stderr else ""

    assert_resumed(lines(sink), expected)


def assert_resumed(got: list[tuple[str, str]], expected: list[tuple[str, str]]) -> None:
    """Killed twice: every event, in order, and at most the delivery in flight repeated each time."""
    assert set(got) == set(expected)  # nothing lost
    repeated = [event for event, n in collections.Counter(got).items() if n > 1]
    # at most one delivery (one step's events) repeated per kill
    assert len({step for step, _ in repeated}) <= 2, repeated
    first_seen = list(dict.fromkeys(got))
    assert first_seen == expected  # and in order


async def test_a_session_killed_mid_attach_repeats_at_most_the_delivery_in_flight(tmp_path: Path) -> None:
    steps = history(STEPS - 1)
    last = fixture("planner_response_text")  # the conversation ends with a reply: its events end a run
    last["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = STEPS - 1
    recording = tmp_path / "conversation.jsonl"
    recording.write_text(json.dumps({"steps": [*steps, last]}) + "\n")
    async with Simulator(profile="1.0.10", pace=0) as sim:
        cascade = load_recording(sim, recording)

        async def run(directory: Path, sink: Path, killed: bool = False) -> asyncio.subprocess.Process:
            args = [str(sim.port), cascade, str(directory), str(sink), str(PAUSE), f"{TRAJ}/{STEPS - 1}"]
            return await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "tests.store.killed_session", *args),
                cwd=REPO,
                stderr=subprocess.DEVNULL if killed else subprocess.PIPE,  # (a pipe nobody reads fills)
            )

        async def ended(child: asyncio.subprocess.Process) -> None:
            _, err = await asyncio.wait_for(child.communicate(), 60)
            assert child.returncode == 0, err.decode()

        async def until(done: Callable[[], bool], child: asyncio.subprocess.Process) -> None:
            async with asyncio.timeout(60):
                while not done() and child.returncode is None:
                    await asyncio.sleep(0.005)

        clean = tmp_path / "clean.txt"
        await ended(await run(tmp_path / "clean", clean))
        expected = lines(clean)
        assert len({k for k, _ in expected}) > STEPS // 2  # most steps deliver something
        indices = [int(k.rsplit("/", 1)[1]) for k, _ in expected if "/u:" not in k]
        assert indices == sorted(indices)  # in the conversation's order (two sources read it)

        sink = tmp_path / "sink.txt"
        for kill_after in (len(expected) // 5, len(expected) // 2):  # killed twice, at two points
            child = await run(tmp_path / "cursor", sink, killed=True)
            start = len(lines(sink))
            await until(lambda: len(lines(sink)) >= start + kill_after // 2, child)  # noqa: B023
            assert child.returncode is None, "the attach ended before the kill"
            child.send_signal(signal.SIGKILL)
            assert await asyncio.wait_for(child.wait(), 10) == -signal.SIGKILL
        await ended(await run(tmp_path / "cursor", sink))
    assert_resumed(lines(sink), expected)
