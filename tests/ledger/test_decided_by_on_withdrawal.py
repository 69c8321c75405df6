"""A gate's withdrawal says who decided it (``GateWithdrawn.decided_by``, issue #36 "on every
surface"), on the simulator: an answer from a surface names it, agy's own terminal and agy's timeout
say so, with or without a ledger; and the one line every surface shows for it."""

from __future__ import annotations

import getpass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.core.decided_line import decided_line
from agy_harness.ports.events import Decider, Event
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on, run_turn


def withdrawn(events: list[Event]) -> list[Any]:
    return [e for e in events if e.type == "gate_withdrawn"]


async def answered_on(
    sim: Simulator, surface: str, answer: GateAnswer, turn: str, **harness: Any
) -> tuple[RecordingSink, Any]:
    """``turn`` sent, its gate answered with ``answer`` from ``surface``: the sink and the gate's one
    withdrawal."""
    sink = RecordingSink()
    sink.surface = surface  # type: ignore[attr-defined]
    async with harness_on(sim, sink, **harness) as session:
        await sink.answers.put(answer)
        await run_turn(session, sink, turn)
    [gone] = withdrawn(sink.events)
    return sink, gone


async def test_a_surfaces_answer_is_on_the_withdrawal_with_verdict_and_scope(sim: Simulator, tmp_path: Path) -> None:
    denial = GateAnswer(allow=False, deny_reason="no")
    _, gone = await answered_on(sim, "board", denial, "run: rm -rf build", ledger=FileLedger(tmp_path / "ledger"))
    assert gone.reason == "answered"  # the reason is unchanged; who decided is beside it
    by = gone.decided_by
    assert (by.kind, by.surface, by.user, by.verdict, by.scope) == ("human", "board", getpass.getuser(), "deny", "once")
    assert decided_line(by).startswith("denied by you on the board, ")


async def test_without_a_ledger_the_withdrawal_still_says_who(sim: Simulator) -> None:
    _, gone = await answered_on(sim, "acp", GateAnswer(allow=True), "run: git status")
    assert (gone.decided_by.surface, gone.decided_by.verdict) == ("acp", "allow")


async def test_agys_own_terminal_is_named_on_the_withdrawal(sim: Simulator) -> None:
    sink = RecordingSink()  # asked, never answers
    async with harness_on(sim, sink) as session:
        await session.send("run: git status")
        await sink.wait_for(lambda: sink.asked)
        await sim.resolve_in_terminal(kind="permission", accept=True)
        await sink.wait_for(lambda: withdrawn(sink.events), timeout=10)
    [gone] = withdrawn(sink.events)
    assert gone.decided_by is not None and gone.decided_by.kind == "agy-terminal"
    assert decided_line(gone.decided_by).startswith("answered in agy's terminal")


async def test_agys_timeout_is_named_on_the_withdrawal() -> None:
    async with Simulator(gate_timeout=0.4, pace=0.05) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            await session.send("run: git status")
            await sink.wait_for(lambda: len(sink.asked) >= 2, timeout=10)
    gone = withdrawn(sink.events)[0]
    assert gone.reason == "timed out" and gone.decided_by.kind == "timeout"
    assert decided_line(gone.decided_by).startswith("timed out")


def test_the_line() -> None:
    at = datetime(2026, 1, 2, 14, 2, tzinfo=UTC).isoformat()
    local = datetime.fromisoformat(at).astimezone().strftime("%H:%M")
    assert decided_line(Decider(surface="board", verdict="allow", scope="once", at=at)) == (
        f"allowed by you on the board, {local}"
    )
    assert decided_line(Decider(kind="rule", rule_id="no-rm", verdict="deny", at=at)) == f"denied by rule no-rm, {local}"
    assert decided_line(Decider(surface="acp", verdict="allow", scope="conversation")) == (
        "allowed by you on the editor (ACP) (for this conversation)"
    )


async def test_answered_on_one_surface_shown_on_the_others(sim: Simulator) -> None:
    """Answered on the board (the sink's surface): the terminal's screen, the ACP tool call's final
    update and the board's event (what its page shows) each say so."""
    import io

    from rich.console import Console

    from agy_harness.adapters.sinks.terminal import TerminalSink
    from agy_harness.composition.entrypoints.acp.mapping import UpdateMapper
    from agy_harness.composition.entrypoints.board.cards import event_view

    sink, gone = await answered_on(sim, "board", GateAnswer(allow=True), "run: git status")
    line = decided_line(gone.decided_by)
    assert line.startswith("allowed by you on the board, ")

    screen = Console(record=True, width=120, color_system=None, force_terminal=False, file=io.StringIO())
    await TerminalSink(screen).deliver([e for e in sink.events if e.type != "gate_opened"])
    assert f"· {line}" in screen.export_text()

    mapper = UpdateMapper()
    updates = [u for e in sink.events for u in mapper.updates(e)]
    final = [u for u in updates if getattr(u, "status", None) == "completed"][-1]
    texts = [c.content.text for c in final.content or [] if getattr(c, "type", "") == "content"]
    assert texts[-1] == line  # the tool call's final update ends with who allowed it

    assert event_view(gone)["decided"] == line
