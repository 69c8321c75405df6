"""Issue #46 item 4: every decision agy took is a record, whatever came before. A board allow is in
flight (recorded, its RPC on the way) when the human denies in agy's terminal: agy took the deny, so
the ledger holds the terminal's deny beside the allow "not taken", and the withdrawal (the board's
retired card) names agy's terminal, not the board -- on the simulator, the real file ledger, and ``agy-harness audit``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.composition.entrypoints.cli import main
from agy_harness.core.decided_line import decided_line
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on

from .helpers import decisions, records, verified


class HeldAnswers:
    """The harness's answers reach the simulated agy only once released (``arrived``: one is held);
    agy's own terminal is not held. What a slow network does to an answer on its way."""

    def __init__(self, sim: Simulator) -> None:
        self.arrived, self.release = asyncio.Event(), asyncio.Event()
        real = sim.handle_interaction

        async def held(cascade_id: str, interaction: dict[str, Any], *, terminal: bool = False) -> None:
            if not terminal:
                self.arrived.set()
                await self.release.wait()
            await real(cascade_id, interaction, terminal=terminal)

        sim.handle_interaction = held  # type: ignore[method-assign]


async def test_a_terminal_deny_while_a_board_allow_is_in_flight_is_recorded(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sink = RecordingSink()
    sink.surface = "board"  # type: ignore[attr-defined]
    held = HeldAnswers(sim)  # the board's answer is on the way...
    async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger")) as session:
        await session.send("run: rm -rf build")
        await sink.wait_for(lambda: sink.asked)
        gate = sink.asked[0]
        await sink.answers.put(GateAnswer(allow=True))
        async with asyncio.timeout(10):
            await held.arrived.wait()
        await sim.resolve_in_terminal(kind="permission", accept=False)  # ...when agy's terminal denies
        held.release.set()
        await sink.wait_for(lambda: any(e.type == "tool_result" for e in sink.events), timeout=15)
        await sink.wait_for(lambda: len(records(tmp_path / "ledger", "delivery")) == 1, timeout=15)
    step = next(s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND")
    assert not step["completedInteractions"][0]["response"]["permission"].get("allow")  # agy took the deny
    taken = records(tmp_path / "ledger", "delivery")[0]["body"]
    assert taken["taken"] is False
    board, terminal = decisions(tmp_path / "ledger", gate.gate_id)
    assert (board["verdict"], board["decided_by"]["surface"]) == ("allow", "board")
    assert (terminal["verdict"], terminal["decided_by"]["kind"]) == ("deny", "agy-terminal")
    [outcome] = [r["body"] for r in records(tmp_path / "ledger", "outcome")]
    assert outcome["decision"] == records(tmp_path / "ledger", "decision")[1]["seq"]
    assert verified(tmp_path / "ledger").ok
    [gone] = [
        e for e in sink.events if e.type == "gate_withdrawn"
    ]  # the board's card: agy's terminal, not the board
    assert gone.decided_by is not None and decided_line(gone.decided_by).startswith(
        "answered in agy's terminal"
    )  # type: ignore[attr-defined]
    assert main(["audit", "--ledger", str(tmp_path / "ledger")]) == 0
    allow, deny = capsys.readouterr().out.splitlines()  # what `agy-harness audit` lists
    assert "allow" in allow and "on board" in allow and "not taken" in allow
    assert "deny" in deny and "by agy-terminal" in deny and "rm -rf build" in deny


async def test_with_a_second_session_watching_agys_deny_is_one_record(sim: Simulator, tmp_path: Path) -> None:
    """The same with another session on the conversation (an editor, asked, never answering): agy's
    terminal is recorded once, by whichever session learns first that the board's allow was not taken,
    and the editor's card names agy's terminal too, not the board's allow the ledger holds (issue #46
    item 5: read from the ledger, unless agy recorded the opposite of an answer not yet taken)."""
    board, editor = RecordingSink(), RecordingSink()
    board.surface, editor.surface = "board", "acp"  # type: ignore[attr-defined]
    held = HeldAnswers(sim)
    async with (
        harness_on(sim, editor, ledger=FileLedger(tmp_path / "ledger")),
        harness_on(sim, board, ledger=FileLedger(tmp_path / "ledger")) as session,
    ):
        await session.send("run: rm -rf build")
        await board.wait_for(lambda: board.asked)
        await board.answers.put(GateAnswer(allow=True))
        async with asyncio.timeout(10):
            await held.arrived.wait()
        await sim.resolve_in_terminal(kind="permission", accept=False)
        held.release.set()
        await board.wait_for(lambda: len(records(tmp_path / "ledger", "delivery")) == 1, timeout=15)
        await editor.wait_for(lambda: any(e.type == "tool_result" for e in editor.events), timeout=15)
    gate = board.asked[0]
    verdicts = [(d["verdict"], d["decided_by"]["kind"]) for d in decisions(tmp_path / "ledger", gate.gate_id)]
    assert verdicts == [("allow", "human"), ("deny", "agy-terminal")]
    assert len(records(tmp_path / "ledger", "outcome")) == 1
    assert verified(tmp_path / "ledger").ok
    for sink in (board, editor):  # neither names the board's allow that agy did not take
        [gone] = [e for e in sink.events if e.type == "gate_withdrawn"]
        assert gone.decided_by is not None and decided_line(gone.decided_by).startswith(
            "answered in agy's terminal"
        )  # type: ignore[attr-defined]
