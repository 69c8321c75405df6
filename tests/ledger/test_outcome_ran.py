"""The ``outcome`` record says what ran -- the command line agy's step shows it ran, read after the
answer -- not agy's proposal: after the human's edit it is the edit, after a hook rewrote it it is the
rewrite, and where it differs from what the human was shown or approved, both texts are kept and
``agy-harness audit`` shows the difference. The ledger still verifies; records written before this
field (``ran_from``) still read and verify, and the listing claims nothing for them.

Through the public path: the simulator (what agy ran: ``sim.executed``), ``open_session`` with the real
file ledger, and the CLI's ``audit``."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.composition.entrypoints.cli import main
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer, LedgerEntry
from tests.integration.helpers import FAST

from .helpers import records, verified


async def answered(sim: Simulator, directory: Path, text: str, answer: Any) -> GateOpened:
    """One turn ``text`` on the simulator, its gate answered ``answer`` through the API; the gate."""
    ledger = FileLedger(directory)
    gate: GateOpened | None = None
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger) as s:
        await s.send(text)
        async for event in s.events():
            if isinstance(event, GateOpened):
                gate = event
                await s.answer(event.gate_id, answer)
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    assert gate is not None
    return gate


def audit(capsys: pytest.CaptureFixture[str], directory: Path, *argv: str) -> tuple[int, str]:
    code = main(["audit", *argv, "--ledger", str(directory)])
    out, _ = capsys.readouterr()
    return code, out


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def test_a_hook_rewrite_is_what_the_outcome_says_ran_and_audit_shows_both(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim.faults.rewrite_command_once = "rm -rf /tmp/x"  # a hook rewrites the approved command
    await answered(sim, tmp_path / "ledger", "run: `git status`", "allow")
    assert sim.executed[-1][0] == "rm -rf /tmp/x"  # what agy ran
    [outcome] = [r["body"] for r in records(tmp_path / "ledger", "outcome")]
    assert outcome["command"] == "rm -rf /tmp/x" and outcome["ran_from"] == "step"
    assert outcome["command_sha256"] == sha("rm -rf /tmp/x")
    assert (outcome["approved"], outcome["approved_sha256"]) == ("git status", sha("git status"))
    assert outcome["proposed"] == "git status"  # what the card showed: not what ran either
    assert verified(tmp_path / "ledger").ok
    code, out = audit(capsys, tmp_path / "ledger")
    [line] = out.splitlines()
    assert code == 0 and "run_command: git status" in line
    assert line.endswith("; ⚠ ran `rm -rf /tmp/x`, not what was approved: `git status`"), line
    assert audit(capsys, tmp_path / "ledger", "verify")[0] == 0


async def test_an_edit_is_what_the_outcome_says_ran_and_audit_names_the_edit(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await answered(sim, tmp_path / "ledger", "kind: runCommand make clean", GateAnswer(allow=True, edited_command="make clean-build"))
    assert sim.executed[-1][0] == "make clean-build"
    [outcome] = [r["body"] for r in records(tmp_path / "ledger", "outcome")]
    assert (outcome["command"], outcome["ran_from"]) == ("make clean-build", "step")
    assert outcome["proposed"] == "make clean" and "approved" not in outcome  # it ran what was approved
    assert verified(tmp_path / "ledger").ok
    [line] = audit(capsys, tmp_path / "ledger")[1].splitlines()
    assert line.endswith("; ran the edited command `make clean-build` (agy proposed `make clean`)"), line


async def test_a_look_alike_rewrite_shows_each_texts_hash_and_the_look_alike(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim.faults.rewrite_command_once = "git statu\u0455"  # CYRILLIC SMALL LETTER DZE
    await answered(sim, tmp_path / "ledger", "run: git status", True)
    [line] = audit(capsys, tmp_path / "ledger")[1].splitlines()
    ran, approved = sha("git statu\u0455")[:8], sha("git status")[:8]
    assert f"not what was approved: `git status` (ran #{ran}, approved #{approved}; ran: " in line, line
    assert "U+0455" in line


async def test_what_ran_that_could_not_be_read_is_said_not_guessed(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """agy's steps cannot be read after the answer: the outcome names no command (not the proposal as
    if it had run), says why, and keeps what was approved; ``audit`` says it was not read."""
    ledger = FileLedger(tmp_path / "ledger")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger) as s:
        await s.send("run: `git status`")
        async for event in s.events():
            if isinstance(event, GateOpened):
                sim.faults.fail("GetCascadeTrajectorySteps", status=400, times=1000, message="steps unreadable")
                await s.answer(event.gate_id, True)
            if event.type == "tool_result":
                async with asyncio.timeout(60):  # the outcome record is written (its read of the steps failed)
                    while not records(tmp_path / "ledger", "outcome"):
                        await asyncio.sleep(0.02)
                sim.faults.failures.clear()
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    [outcome] = [r["body"] for r in records(tmp_path / "ledger", "outcome")]
    assert (outcome["command"], outcome["ran_from"]) == ("", "unread")
    assert outcome["unread"].startswith("agy's steps could not be read (") and "steps unreadable" in outcome["unread"]
    assert (outcome["approved"], outcome["proposed"]) == ("git status", "git status")
    assert verified(tmp_path / "ledger").ok
    [line] = audit(capsys, tmp_path / "ledger")[1].splitlines()
    assert "; what ran was not read from agy's step (agy's steps could not be read (" in line, line


def test_agys_own_terminal_edit_is_what_it_approved() -> None:
    from agy_harness.core.decision_record import recorded_command
    from agy_harness.ports.events import GateOpened as Gate

    gate = Gate(id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
                interaction="runCommand", request={"proposedCommandLine": "ls"})  # fmt: skip
    edited = {"runCommand": {"confirm": True, "proposedCommandLine": "ls", "submittedCommandLine": "ls -la"}}
    assert recorded_command(gate, edited) == "ls -la"
    assert recorded_command(gate, {"runCommand": {"confirm": True, "proposedCommandLine": "ls"}}) == "ls"
    assert recorded_command(gate, {"runCommand": {"confirm": False, "proposedCommandLine": "ls"}}) is None


async def test_a_command_that_ran_as_shown_records_no_difference(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await answered(sim, tmp_path / "ledger", "run: git status", "yes")
    [outcome] = [r["body"] for r in records(tmp_path / "ledger", "outcome")]
    assert (outcome["command"], outcome["ran_from"]) == ("git status", "step")
    assert "approved" not in outcome and "proposed" not in outcome
    [line] = audit(capsys, tmp_path / "ledger")[1].splitlines()
    assert line.endswith("run_command: git status" + line.partition("run_command: git status")[2])
    assert "ran `" not in line and "⚠" not in line


def test_records_written_before_the_field_still_read_verify_and_claim_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An outcome record as the ledger wrote it before (``command`` was agy's proposal, no
    ``ran_from``): it verifies, and ``audit`` lists its decision without saying what ran."""
    directory = tmp_path / "ledger"
    ledger = FileLedger(directory)
    try:
        decision = {
            "conversation": "c1", "gate_id": "g1", "step": "t/3", "kind": "permission", "tool": "run_command",
            "request_digest": "d", "shown": "run_command: git status", "verdict": "allow", "detail": {},
            "scope": "once", "decided_by": {"kind": "human", "surface": "board", "user": "me"}, "latency_ms": 5,
        }  # fmt: skip
        seq = ledger.record_now(LedgerEntry(type="decision", body=decision))
        ledger.record_now(LedgerEntry(type="delivery", body={"conversation": "c1", "gate_id": "g1", "decision": seq, "taken": True}))
        old = {
            "conversation": "c1", "gate_id": "g1", "decision": seq, "tool": "run_command", "command": "git status",
            "error": False, "output_sha256": sha(""), "output_chars": 0, "output_tail": "",
        }  # fmt: skip
        ledger.record_now(LedgerEntry(type="outcome", body=old))
    finally:
        ledger.close()
    assert verified(directory).ok
    code, out = audit(capsys, directory, "verify")
    assert code == 0 and "3 records" in out
    [line] = audit(capsys, directory)[1].splitlines()
    assert line.endswith("[c1] run_command: git status")


async def test_an_answer_agy_did_not_take_is_listed_as_not_taken(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """agy refused the first answer (its scope field): the ledger's delivery record says so, and the
    listing says it too (it once listed it as a plain allow, as if it had decided the gate)."""
    from agy_harness.ports.errors import AnswerNotDelivered

    sim.faults.refuse_scope = True
    ledger = FileLedger(tmp_path / "ledger")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger) as s:
        await s.send("run: ls -la")
        async for event in s.events():
            if isinstance(event, GateOpened):
                with pytest.raises(AnswerNotDelivered):
                    await s.answer(event.gate_id, "allow conversation")
                await s.answer(event.gate_id, "allow")
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    assert [r["body"]["taken"] for r in records(tmp_path / "ledger", "delivery")] == [False, True]
    second = records(tmp_path / "ledger", "decision")[1]["seq"]
    assert [r["body"]["decision"] for r in records(tmp_path / "ledger", "outcome")] == [second]  # the taken one's
    refused, allowed = audit(capsys, tmp_path / "ledger")[1].splitlines()
    assert refused.endswith("; not taken: agy did not take this answer"), refused
    assert "not taken" not in allowed and "run_command: ls -la" in allowed
