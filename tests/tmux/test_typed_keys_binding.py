"""Keys typed into agy's pane land only on the prompt they are meant for (issue #26, case 1).

With agy's pane known the harness types the human's choice into agy's own prompt. It used to type it
after the RPC answer, blind: when agy asked its next request within milliseconds, the keys approved
THAT one (``echo a && rm -rf ~/work``: allowing ``echo a`` ran ``rm -rf ~/work``; a question answered
``1`` approved the command agy asked next). Now keys are typed only while agy waits on exactly that
request and its pane shows that request's prompt with nothing typed; otherwise nothing is typed and a
notice says so. The simulated TUI (paced fast: agy re-asks within a few ms) is the ground.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import libtmux

from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink

from .conftest import HttpSteps, start_tui
from .test_tui_dismiss import session_on

RM = "rm -rf ~/work"


def rm_steps(steps: list[Any]) -> list[Any]:
    return [s for s in steps if s.get("runCommand", {}).get("commandLine") == RM]


async def _first_answered_then_rm_asked(
    server: libtmux.Server, tmp_path: Path, turn: str, first: GateAnswer
) -> tuple[RecordingSink, list[Any]]:
    tui = await start_tui(server, tmp_path, pace=0.01)
    sink = RecordingSink()
    await sink.answers.put(first)  # the human answers the first request only
    steps = HttpSteps(tui.base_url)
    try:
        async with session_on(tui, server, sink, pane=True) as session:
            await session.send(turn)
            await sink.wait_for(lambda: len(sink.asked) == 2, 20)  # rm -rf is put to the human
            await tui.wait_screen(lambda lines: any(line.strip() == f"$ {RM}" for line in lines))
            await asyncio.sleep(1.0)  # time for stray keys to land
            final = await steps.read_steps(tui.cascade_id)
        return sink, final
    finally:
        await steps.aclose()


async def test_allowing_the_first_command_never_approves_the_next(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    sink, steps = await _first_answered_then_rm_asked(
        tmux_server, tmp_path, f"run: echo a && {RM}", GateAnswer(allow=True)
    )
    assert [g.permission.command_line for g in sink.asked if g.permission] == ["echo a", RM]
    [rm] = rm_steps(steps)
    assert rm["status"] == "CORTEX_STEP_STATUS_WAITING" and "completedInteractions" not in rm
    [echo] = [s for s in steps if s.get("runCommand", {}).get("commandLine") == "echo a"]
    assert echo["status"] == "CORTEX_STEP_STATUS_DONE"  # the human's allow reached its own request


async def test_a_question_answered_with_1_never_approves_the_command_asked_next(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    sink, steps = await _first_answered_then_rm_asked(
        tmux_server,
        tmp_path,
        f"ask: which part first? and run `{RM}`",
        GateAnswer(selections=(("1",),)),
    )
    assert [g.kind for g in sink.asked] == ["question", "permission"]
    [rm] = rm_steps(steps)
    assert rm["status"] == "CORTEX_STEP_STATUS_WAITING" and "completedInteractions" not in rm


async def test_nothing_is_typed_onto_a_prompt_that_is_not_the_requests(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    """The human has typed into agy's prompt: the harness types nothing there, says so, and the answer
    goes over RPC (the prompt, left as the human made it, is agy's to close)."""
    tui = await start_tui(tmux_server, tmp_path)
    sink = RecordingSink()
    steps = HttpSteps(tui.base_url)
    try:
        async with session_on(tui, tmux_server, sink, pane=True) as session:
            await session.send("run: pwd")
            await sink.wait_for(lambda: bool(sink.asked), 20)
            await tui.wait_screen(lambda lines: any(line.strip() == "$ pwd" for line in lines))
            tui.send_literal("4")  # half an answer, typed by the human in agy's terminal
            await tui.wait_screen(lambda lines: lines[-2].startswith("> 4"))
            await sink.answers.put(GateAnswer(allow=True))
            [gate] = [e for e in sink.events if isinstance(e, GateOpened)]
            await steps.wait_steps(
                tui.cascade_id, lambda s: s[gate.step_index]["status"] == "CORTEX_STEP_STATUS_DONE", 20
            )
            await sink.wait_for(
                lambda: any("typed nothing" in getattr(e, "text", "") for e in sink.events), 5
            )
        lines = tui.capture()
        assert lines[-2].startswith("> 4")  # the human's keys are untouched, nothing appended
    finally:
        await steps.aclose()
