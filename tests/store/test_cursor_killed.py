"""The file cursor store against a real SIGKILL: a harness killed mid-attach and started again
delivers every event, and repeats at most the one delivery the kill caught between the consumer's
acceptance and the journal's record (the journal records each delivery as it is accepted, not once
per batch: a batch-sized record would repeat everything the batch had delivered)."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.core.fixtures import REPO

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

    got = lines(sink)
    assert set(got) == set(expected)  # nothing lost
    repeated = [event for event, n in collections.Counter(got).items() if n > 1]
    # at most one delivery (one step's events) repeated per kill
    assert len({step for step, _ in repeated}) <= 2, repeated
    first_seen = list(dict.fromkeys(got))
    assert first_seen == expected  # and in order
