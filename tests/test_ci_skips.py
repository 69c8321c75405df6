"""tests/ci_skips.py: with CI=true a skipped test fails the run (unless its reason is allowed anywhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
import pytest

def test_runs():
    assert True

def test_needs_something():
    pytest.skip({reason!r})
"""


def _run(tmp_path: Path, reason: str, ci: str) -> subprocess.CompletedProcess[str]:
    sample = tmp_path / "test_sample.py"
    sample.write_text(SAMPLE.format(reason=reason))
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci else {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.ci_skips", str(sample)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def test_in_ci_a_skip_fails_the_run(tmp_path: Path) -> None:
    out = _run(tmp_path, "the tmux binary is not on PATH", ci="true")
    assert out.returncode == 1, out.stdout
    assert "1 skipped test(s) fail the run" in out.stdout and "the tmux binary is not on PATH" in out.stdout


def test_locally_a_skip_is_a_skip(tmp_path: Path) -> None:
    out = _run(tmp_path, "the tmux binary is not on PATH", ci="")
    assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout


def test_a_skip_right_on_any_machine_passes_in_ci(tmp_path: Path) -> None:
    out = _run(tmp_path, "process discovery is tested on Linux", ci="true")
    assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout
