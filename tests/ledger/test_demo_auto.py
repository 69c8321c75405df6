"""Issue 46 item 9: ``agy-harness demo --auto`` through the real CLI (a process of its own, the
simulator). Its answers are the ``--auto`` policy's, not a human's: the ledger records them as kind
``auto`` naming the policy, and ``agy-harness audit`` says so (before: kind ``human`` on ``demo``,
exported as a human override). A ledger it cannot write ends the run at once with one line, exit 1
(before: every answer refused and the gate asked again, the demo waiting until killed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.in_process import run_cli

from .helpers import decisions, verified


def demo(ledger: Path, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGY_HARNESS_LEDGER_DIR": str(ledger)}
    return subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", "demo", "--auto", "--pace", "0", *extra],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip


def audit(ledger: Path) -> subprocess.CompletedProcess[str]:
    """``agy-harness audit --ledger LEDGER`` in this process (tests/in_process.py: the same argv,
    stdout, stderr and exit code): what it lists is the subject here, not its process."""
    return run_cli("audit", "--ledger", str(ledger))


def test_auto_answers_are_recorded_as_the_policys(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    run = demo(ledger)
    assert run.returncode == 0, run.stderr[-2000:]
    made = decisions(ledger)
    assert [d["verdict"] for d in made] == ["allow", "deny", "choose"]
    for body in made:
        assert body["decided_by"]["kind"] == "auto", body["decided_by"]
        assert (body["decided_by"]["rule_id"], body["decided_by"]["surface"]) == ("demo --auto", "demo")
    assert verified(ledger).ok
    listed = audit(ledger)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 3 and all(
        "by the automatic policy demo --auto on demo (no human)" in x for x in lines
    )


def test_a_ledger_it_cannot_write_ends_the_run_in_one_line(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    ledger.mkdir(mode=0o700)
    (ledger / "ledger.jsonl").mkdir()  # (the writer cannot open it: even root cannot write there)
    run = demo(ledger, "--idle-limit", "120")
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith(
        "agy-harness: the demo stops: the decision ledger cannot record its answers (the decision ledger at "
    ), run.stderr
    assert run.stdout.count("auto-answer → ") == 1, run.stdout  # asked once, not again and again
