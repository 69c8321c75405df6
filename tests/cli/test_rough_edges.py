"""The rough edges a newcomer met (issue 47), each through the real CLI (a subprocess; the terminal's
own behaviour in a tmux pane): what is said, in one line, and the exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=cwd,
    )  # fmt: skip


def one_line(done: subprocess.CompletedProcess[str], *said: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for text in said:
        assert text in lines[0], lines[0]
    return lines[0]


def test_record_refuses_to_overwrite_a_recording_unless_forced(tmp_path: Path) -> None:
    """Before, ``record --out`` truncated an existing file without a word (port 1 answers nothing: once
    past the file check the command fails finding agy, exit 1, and says nothing of the file)."""
    kept = tmp_path / "session.jsonl"
    kept.write_text('{"steps": []}\n')
    one_line(run("record", "--port", "1", "--out", str(kept)), f"--out {kept}: the file exists", "--force")
    assert kept.read_text() == '{"steps": []}\n'
    forced = run("record", "--port", "1", "--out", str(kept), "--force")
    assert forced.returncode == 1 and "exists" not in forced.stderr
    assert "--force" in run("record", "--help").stdout
