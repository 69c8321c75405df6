"""The demo's thinking is whole at every pace and profile (issue #39 point 4): ``demo --pace 0`` (what CI
runs) showed each tool turn's thinking as "I …", and the 1.0.4 profile (polled every 0.25 s) did at the
normal pace: the simulator's last thinking snapshot and its DONE step (which drops the thinking) reached
the reader together. The simulator now lets its readers have the whole thought first."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


def _every_thought_whole(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, run.stderr[-2000:]
    thoughts = re.findall(r"^thinking .*\n\n(.*)$", run.stdout, re.M)
    assert len(thoughts) >= 6, run.stdout
    assert all(t.endswith(".") and "…" not in t for t in thoughts), thoughts
    for command in ("git status", "rm -rf build"):
        assert f"I will run {command} in the workspace." in thoughts


def test_every_thought_is_shown_whole_at_pace_0(auto_demo: subprocess.CompletedProcess[str]) -> None:
    """``demo --auto --pace 0``: the run tests/cli/test_demo_polish.py reads too (conftest.auto_demo)."""
    _every_thought_whole(auto_demo)


@pytest.mark.parametrize(
    "args", [["--profile", "1.0.4", "--pace", "0"], ["--profile", "1.0.4"]], ids=" ".join
)
def test_every_thought_is_shown_whole(args: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", "demo", "--auto", *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    _every_thought_whole(run)
