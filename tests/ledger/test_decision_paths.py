"""Every decision path writes exactly one ``decision`` record, before agy is told, on the real file
ledger, against the simulator (what agy received is read from its steps): an answer through the API
and through a sink (the surface named), agy's own terminal, agy's timeout, an interrupt's denial. The
follow-ups: whether agy took it, and what then ran. A ledger that cannot record refuses the answer:
nothing reaches agy."""

from __future__ import annotations

import asyncio
import getpass
import os
from pathlib import Path
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.composition.root.session import open_session
from agy_harness.ports.errors import AnswerNotDelivered, LedgerUnavailable
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer, LedgerEntry
from tests.fakes import RecordingSink
from tests.integration.helpers import FAST, harness_on, run_turn

from .helpers import decisions, records, verified


def of(events: list[Event], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def run_command(sim: Simulator) -> dict[str, Any]:
    [step] = [s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
    return step


async def test_an_api_answer_is_recorded_once_before_delivery_then_taken_then_what_ran(
    sim: Simulator, tmp_path: Path
) -> None:
    ledger = FileLedger(tmp_path / "ledger")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger) as s:
        await s.send("run: git status")
        async for event in s.events():
            if isinstance(event, GateOpened):
                gate = event
                await s.answer(event.gate_id, "yes")
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    assert run_command(sim)["completedInteractions"][0]["response"]["permission"] == {"allow": True}
    [decision] = decisions(tmp_path / "ledger")
    assert decision["gate_id"] == gate.gate_id and decision["request_digest"] == gate.digest
    assert decision["verdict"] == "allow" and decision["scope"] == "once"
    assert decision["decided_by"] == {
        "kind": "human", "surface": "api", "user": getpass.getuser(), "rule_id": "", "rules_hash": ""
    }  # fmt: skip
    assert decision["shown"] == "run_command: git status" + (
        f"  (in {gate.permission.cwd})" if gate.permission and gate.permission.cwd else ""
    )
    assert isinstance(decision["latency_ms"], int) and decision["conversation"] == sim.cascade_id
    kinds = [r["type"] for r in records(tmp_path / "ledger")]
    assert kinds == ["decision", "delivery", "outcome"]
    delivery, outcome = (r["body"] for r in records(tmp_path / "ledger")[1:])
    assert delivery == {
        "conversation": sim.cascade_id, "gate_id": gate.gate_id, "decision": 1, "taken": True,
        "agy": "taken", "interaction": "permission",
    }  # fmt: skip
    assert outcome["command"] == "git status" and outcome["error"] is False and outcome["decision"] == 1
    assert "On branch main" in outcome["output_tail"]
    assert verified(tmp_path / "ledger").ok


async def test_a_sink_answer_names_the_sinks_surface_and_a_denial_what_did_not_run(
    sim: Simulator, tmp_path: Path
) -> None:
    sink = RecordingSink()
    sink.surface = "acp"  # type: ignore[attr-defined]  # (what each front end's sink says)
    async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger")) as session:
        await sink.answers.put(GateAnswer(allow=False, deny_reason="use make clean"))
        await run_turn(session, sink, "run: rm -rf build")
    [decision] = decisions(tmp_path / "ledger")
    assert (decision["verdict"], decision["detail"]) == ("deny", {"reason": "use make clean"})
    assert decision["decided_by"]["surface"] == "acp" and decision["decided_by"]["kind"] == "human"
    outcome = records(tmp_path / "ledger", "outcome")[0]["body"]
    assert outcome["error"] is True and outcome["command"] == "rm -rf build"


async def test_agys_own_terminal_answer_is_one_record_with_agys_verdict(
    sim: Simulator, tmp_path: Path
) -> None:
    sink = RecordingSink()  # asked, never answers: the human answers in agy's terminal
    async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger")) as session:
        await session.send("run: git status")
        await sink.wait_for(lambda: sink.asked)
        await sim.resolve_in_terminal(kind="permission", accept=True)
        await sink.wait_for(lambda: of(sink.events, "tool_result"), timeout=10)
    [decision] = decisions(tmp_path / "ledger")
    assert decision["gate_id"] == sink.asked[0].gate_id
    assert (decision["verdict"], decision["decided_by"]["kind"]) == ("allow", "agy-terminal")
    assert [r["type"] for r in records(tmp_path / "ledger")] == ["decision", "outcome"]
    assert verified(tmp_path / "ledger").ok


async def test_agys_timeout_is_one_record(tmp_path: Path) -> None:
    async with Simulator(gate_timeout=0.4, pace=0.05) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger")) as session:
            await session.send("run: git status")
            await sink.wait_for(lambda: len(sink.asked) >= 2, timeout=10)  # timed out, asked again
    first = sink.asked[0]
    [decision] = decisions(tmp_path / "ledger", first.gate_id)
    assert (decision["verdict"], decision["decided_by"]["kind"]) == ("timeout", "timeout")


async def test_an_interrupt_that_denies_a_parked_gate_is_one_record(sim: Simulator, tmp_path: Path) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger")) as session:
        await session.send("run: git status")
        await sink.wait_for(lambda: sink.asked)
        report = await session.interrupt()
        await sink.wait_for(lambda: of(sink.events, "gate_withdrawn"))
    assert report.denied_gates == (sink.asked[0].gate_id,)
    [decision] = decisions(tmp_path / "ledger")
    assert (decision["verdict"], decision["decided_by"]["kind"]) == ("deny", "interrupt")
    assert records(tmp_path / "ledger", "delivery")[0]["body"]["taken"] is True


class BrokenLedger:
    def __init__(self) -> None:
        self.tried = 0

    async def record(self, entry: LedgerEntry) -> int:
        self.tried += 1
        raise LedgerUnavailable("disk full")


async def allowed_until_refused(s: Any) -> list[str]:
    """Allow the session's first gate; the answer is refused (AnswerNotDelivered). The notices seen."""
    notices: list[str] = []
    async for event in s.events():
        if isinstance(event, GateOpened):
            try:
                await s.answer(event.gate_id, True)
            except AnswerNotDelivered:
                break
        if event.type == "notice":
            notices.append(event.text)
    return notices


async def test_an_answer_the_ledger_cannot_record_is_not_sent(sim: Simulator) -> None:
    broken = BrokenLedger()
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=broken) as s:
        await s.send("run: git status")
        notices = await allowed_until_refused(s)
        for _ in range(3):  # the refusal's notice follows
            event = await asyncio.wait_for(anext(s.events()), 5)
            if event.type == "notice":
                notices.append(event.text)  # type: ignore[union-attr]
                break
        assert run_command(sim)["status"] == "CORTEX_STEP_STATUS_WAITING"  # nothing reached agy
    assert broken.tried == 1
    assert any("the decision ledger could not record it (disk full)" in n for n in notices), notices


async def test_an_edited_command_is_what_the_decision_record_says_was_approved(
    sim: Simulator, tmp_path: Path
) -> None:
    """An allow with an edit approves the edited line, not agy's proposal: the record keeps the edited
    text (redacted, as shown) and its digest, so "who approved what" names what the human sent."""
    ledger = FileLedger(tmp_path / "ledger")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger) as s:
        await s.send("kind: runCommand make test")
        async for event in s.events():
            if isinstance(event, GateOpened):
                await s.answer(event.gate_id, "edit: make lint")
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    assert ("make lint", sim.workspace) in sim.executed  # what agy ran: the edit
    [decision] = decisions(tmp_path / "ledger")
    assert decision["verdict"] == "allow"
    assert decision["detail"]["edited_command"] == "make lint"
    assert len(decision["detail"]["command_digest"]) == 32
    assert verified(tmp_path / "ledger").ok


def test_agys_own_answer_to_a_run_command_is_read_not_unknown() -> None:
    from agy_harness.core.decision_record import recorded_verdict
    from agy_harness.ports.events import GateOpened as Gate

    gate = Gate(id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1, interaction="runCommand")
    confirmed = {"runCommand": {"confirm": True, "proposedCommandLine": "ls", "submittedCommandLine": "ls -la"}}
    assert recorded_verdict(gate, confirmed) == ("allow", {"edited_command": "ls -la"})
    assert recorded_verdict(gate, {"runCommand": {"proposedCommandLine": "ls"}}) == ("deny", {})


async def test_an_answer_the_ledger_refused_is_not_named_as_the_decider(sim: Simulator) -> None:
    """The ledger refused the answer (nothing reached agy); the human then answers in agy's terminal:
    the withdrawal names agy's terminal, not the refused answer's surface (it once named the API)."""
    async with open_session(
        pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=BrokenLedger()
    ) as s:
        await s.send("run: git status")
        await allowed_until_refused(s)
        await sim.resolve_in_terminal(kind="permission", accept=True)
        async with asyncio.timeout(60):
            async for event in s.events():
                if event.type == "gate_withdrawn":
                    decided_by = event.decided_by  # type: ignore[union-attr]
                    break
    assert decided_by is not None and decided_by.kind == "agy-terminal", decided_by
