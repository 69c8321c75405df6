"""The decision ledger against a real SIGKILL: a writer killed at three points, mid-stream, leaves a
ledger that verifies, holding every record it acknowledged (at most the record in flight is lost,
torn or whole); the next writer cuts a torn line off and goes on chaining, and it still verifies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.core.fixtures import REPO

from .helpers import records, verified

COUNT = 100_000  # more than a kill lets it write


def writer(directory: Path, acks: Path, count: int = COUNT) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "tests.ledger.killed_writer", str(directory), str(acks), str(count)]
    return subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE)


def acknowledged(acks: Path) -> list[int]:
    if not acks.exists():
        return []
    return [int(x) for x in acks.read_text().split("\n")[:-1]]  # a torn last line is not an ack


def test_a_writer_killed_mid_stream_leaves_a_ledger_that_verifies(tmp_path: Path) -> None:
    directory, acks = tmp_path / "ledger", tmp_path / "acks"
    for kills, wanted in enumerate((20, 60, 120), 1):  # killed three times, at three points
        child = writer(directory, acks)
        deadline = time.monotonic() + 60
        while len(acknowledged(acks)) < wanted and child.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.002)
        assert child.poll() is None, "the writer ended before the kill"
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
        report = verified(directory)
        assert report.ok, report.problems
        held = {r["seq"] for r in records(directory)}
        assert set(acknowledged(acks)) <= held  # every acknowledged record survived the kill
        # and besides, at most the one record in flight at each kill (written whole, not acknowledged)
        assert len(held) <= len(acknowledged(acks)) + kills
    last = writer(directory, acks, 5)
    assert last.wait(timeout=60) == 0, last.stderr.read() if last.stderr else ""
    report = verified(directory)
    assert report.ok and report.notes == [], (report.problems, report.notes)
    assert [r["seq"] for r in records(directory)] == list(range(1, report.records + 1))
