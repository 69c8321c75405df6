"""Issue #46 item 5: with two harness sessions on one conversation, the one that did not answer shows
who did -- read from the decision ledger they share -- not "answered in agy's terminal": a human on
another session's board, or another session's rule. On the simulator, two real sessions, the real file
ledger; what the ACP client's tool call and the board's card say, and what the terminal prints."""

from __future__ import annotations

import getpass
import io
from pathlib import Path
from typing import Any

from rich.console import Console

from agy_harness.adapters.policy.files import Tier, load_policy
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.composition.entrypoints.acp.mapping import UpdateMapper
from agy_harness.composition.entrypoints.board.cards import event_view
from agy_harness.core.decided_line import decided_line
from agy_harness.ports.events import Event
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on, run_turn

from .helpers import decisions

RULES = """\
[[rule]]
id = "git-status"
decision = "allow"
command = ["git", "status"]
"""


def withdrawn(events: list[Event]) -> list[Any]:
    return [e for e in events if e.type == "gate_withdrawn"]


def sink_on(surface: str) -> RecordingSink:
    sink = RecordingSink()
    sink.surface = surface  # type: ignore[attr-defined]
    return sink


def acp_line(events: list[Event]) -> str:
    """The last text of the ACP tool call's final update (what the editor shows under the call)."""
    mapper = UpdateMapper()
    updates = [u for e in events for u in mapper.updates(e)]
    final = [u for u in updates if getattr(u, "status", None) in ("completed", "failed")][-1]
    return [c.content.text for c in final.content or [] if getattr(c, "type", "") == "content"][-1]


async def test_the_session_that_did_not_answer_names_the_board_of_the_other(
    sim: Simulator, tmp_path: Path
) -> None:
    board, acp = sink_on("board"), sink_on("acp")  # acp is asked too, and never answers
    await board.answers.put(GateAnswer(allow=True))
    async with (
        harness_on(sim, acp, ledger=FileLedger(tmp_path / "ledger")),
        harness_on(sim, board, ledger=FileLedger(tmp_path / "ledger")) as session,
    ):
        await run_turn(session, board, "run: git status")
        await acp.wait_for(lambda: withdrawn(acp.events), timeout=10)
    [decision] = decisions(tmp_path / "ledger")  # one decision: the board's (the acp session's is not agy's)
    assert decision["decided_by"]["surface"] == "board"
    [gone] = withdrawn(acp.events)
    by = gone.decided_by
    assert by is not None and (by.kind, by.surface, by.user, by.verdict) == (
        "human",
        "board",
        getpass.getuser(),
        "allow",
    )
    line = decided_line(by)
    assert line.startswith("allowed by you on the board, ")
    assert acp_line(acp.events) == line  # the editor's tool call says the board allowed it
    assert event_view(gone)["decided"] == line


async def test_the_session_without_the_rule_names_the_other_sessions_rule(
    sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "rules.toml").write_text(RULES, encoding="utf-8")
    rules, board = sink_on("acp"), sink_on("board")
    async with (
        harness_on(sim, board, ledger=FileLedger(tmp_path / "ledger")),
        harness_on(
            sim, rules, ledger=FileLedger(tmp_path / "ledger"), policy=load_policy(tiers=[Tier(2, tmp_path)])
        ) as session,
    ):
        await run_turn(session, rules, "run: git status")
        await board.wait_for(lambda: withdrawn(board.events), timeout=10)
    [gone] = withdrawn(board.events)
    assert gone.decided_by is not None and decided_line(gone.decided_by).startswith(
        "allowed by rule git-status"
    )
    screen = Console(record=True, width=160, color_system=None, force_terminal=False, file=io.StringIO())
    await TerminalSink(screen).deliver([e for e in board.events if e.type != "gate_opened"])
    assert "allowed by rule git-status" in screen.export_text()  # what `agy-harness attach`'s terminal prints
    assert "agy's terminal" not in screen.export_text()


async def test_the_editor_on_agy_harness_acp_says_the_board_allowed_it(tmp_path: Path) -> None:
    """The real ``agy-harness acp`` (its own process, the ACP SDK's client side) has the request open
    in the editor, unanswered; a board session in this process allows it: the editor's tool call
    ends with who allowed it, read from the ledger both share."""
    import asyncio
    import os

    from agy_harness.composition.root.session import open_session
    from tests.acp_agent.helpers import RecordingClient, acp_agent
    from tests.integration.helpers import FAST

    held = asyncio.Event()

    async def never(tool_call: Any, options: list[Any]) -> str | None:
        await held.wait()  # the editor's human never answers
        return None

    async with Simulator(pace=0.05) as agy:
        await agy.submit_user_turn("run: git status")
        await agy.wait_idle(timeout=30)  # parked on the permission gate
        client = RecordingClient(permission=never)
        env = {**os.environ, "AGY_HARNESS_LEDGER_DIR": str(tmp_path / "ledger")}
        async with acp_agent(client, where=("--port", str(agy.port)), env=env) as conn:
            sid = agy.cascade_id
            await conn.load_session(cwd=agy.workspace, session_id=sid, mcp_servers=[])
            await client.wait_for(lambda: bool(client.permission_requests))
            call = client.permission_requests[0][1].tool_call_id
            board = sink_on("board")
            await board.answers.put(GateAnswer(allow=True))
            async with open_session(
                pids=[os.getpid()],
                cascade_id=sid,
                sink=board,
                options=FAST,
                ledger=FileLedger(tmp_path / "ledger"),
            ):
                await board.wait_for(lambda: withdrawn(board.events), timeout=30)

            def ended() -> list[Any]:
                return [
                    u
                    for u in client.of(sid, "tool_call_update")
                    if u.tool_call_id == call and u.status in ("completed", "failed")
                ]

            await client.wait_for(lambda: bool(ended()))
            held.set()
    texts = [c.content.text for c in ended()[-1].content or [] if getattr(c, "type", "") == "content"]
    assert texts[-1].startswith("allowed by you on the board, ")
    said = [u for u in client.of(sid, "tool_call_update") if u.tool_call_id == call]
    assert not any("agy's terminal" in str(u) for u in said)
