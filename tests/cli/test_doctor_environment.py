"""``agy-harness doctor`` checks this machine also without agy (issue #39 point 8): a line per check
(this package, tmux, the acp and board extras, a Python 3.12 for omnigent, the agy command, agy
itself), exit 1 when no agy could be probed; "Is agy running?" is not said twice; ``--json`` has the
checks as objects and agy's version as fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.in_process import run_cli

from .conftest import Terminal, cli

CHECKS = ("agy-harness:", "tmux:", "acp extra:", "board extra:", "omnigent's Python:", "agy command:", "agy:")


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """doctor run in this process (tests/in_process.py): its report is the subject; the process (exit 1,
    every check a line on a terminal) is the terminal tests' below."""
    nobody = str(uuid.uuid4())  # no agy on this machine hosts it: agy is "not found", whatever runs
    return run_cli("doctor", "--cascade", nobody, *args, env=env)


@pytest.mark.parametrize(("width", "height"), [(80, 24), (100, 30)])
def test_without_agy_every_check_is_a_line(terminal: Terminal, width: int, height: int) -> None:
    pane = terminal.run(cli("doctor", "--cascade", str(uuid.uuid4())), width=width, height=height)
    assert pane.wait_exit() == 1
    rows = pane.screen().splitlines()
    for name in CHECKS:
        assert any(row.startswith(("  ok  " + name, "  --  " + name)) for row in rows), (name, rows)
    said = " ".join(pane.screen().split())
    assert "  --  agy: not found" in pane.screen() and "Is agy running?" not in said
    assert said.count("no agy") <= 1 and "Traceback" not in said


def test_a_missing_tmux_is_said_with_what_to_do(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    run = doctor(env={**os.environ, "PATH": str(bin_dir)})
    assert run.returncode == 1
    [line] = [row for row in run.stdout.splitlines() if "tmux:" in row]
    assert line.startswith("  --  tmux: not installed") and "apt install tmux" in line


def test_json_is_structured() -> None:
    run = doctor("--json")
    assert run.returncode == 1
    report = json.loads(run.stdout)
    assert report["agy_found"] is False
    checks = {c["name"]: c for c in report["environment"]}
    assert set(checks) >= {"agy-harness", "tmux", "acp extra", "board extra", "omnigent's Python", "agy"}
    assert all(isinstance(c["ok"], bool) and isinstance(c["detail"], str) for c in checks.values())
    assert checks["agy"]["ok"] is False
    assert checks["agy-harness"]["version"] and "\n" not in json.dumps(checks["agy-harness"]["version"])


@pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="this Python is omnigent's: no python3.12 is looked for"
)
@pytest.mark.parametrize("says", ["", "pyenv: python3.12: command not found"])
def test_a_python3_12_that_does_not_say_its_version(tmp_path: Path, says: str) -> None:
    """A ``python3.12`` on PATH that prints nothing (a broken shim) or no version (pyenv's shim of a
    version not installed) is a check that fails, said in its line; doctor crashed on the first
    (exit 1, "list index out of range (IndexError ...)", no check shown) and called the second ok."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "python3.12"
    shim.write_text(f"#!/bin/sh\necho '{says}' >&2\nexit 127\n" if says else "#!/bin/sh\nexit 0\n")
    shim.chmod(0o755)
    run = doctor(env={**os.environ, "PATH": str(bin_dir)})
    assert run.returncode == 1 and "Error" not in run.stderr, run.stderr
    [line] = [row for row in run.stdout.splitlines() if "omnigent's Python:" in row]
    assert line.startswith("  --  omnigent's Python:") and str(shim) in line, line
