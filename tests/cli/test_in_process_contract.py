"""tests/in_process.py's ``run_cli`` against the real command: for the same argv, the same stdout,
stderr and exit code as ``agy-harness`` started as a process (the contract the in-process tests rely on)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.acp_agent.helpers import agy_harness_command
from tests.in_process import run_cli

CASES = [
    ("policy", "explain", "--rules"),  # a usage error: exit 2, one line
    ("policy", "test", "rm -rf /"),
    ("replay", "--help"),  # stdout, laid out without COLUMNS
    ("replay", "/nonexistent/recording.jsonl"),
    ("audit", "verify", "--ledger", "/nonexistent/ledger"),
]


@pytest.mark.parametrize("argv", CASES, ids=" ".join)
def test_in_process_equals_the_real_command(argv: tuple[str, ...], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update({"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)})
    real = subprocess.run(
        [*agy_harness_command(), *argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    mine = run_cli(
        *argv, env={"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}, cwd=tmp_path
    )
    assert (mine.returncode, mine.stdout, mine.stderr) == (real.returncode, real.stdout, real.stderr)
