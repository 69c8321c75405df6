"""agy's TUI may keep its prompt open after an answer that came over RPC, and the next typed turn
lands in it. With agy's pane known the harness types the answer into agy's own prompt instead (option
keys + Enter, or Escape: the reference's live-verified keys, omnigent 0.19.1 ``to_tui_selection_keys``),
only onto that request's prompt (tests/tmux/test_typed_keys_binding.py), so the prompt closes.
"Allow always" goes only through agy's own menu. The simulated TUI keeps a prompt answered elsewhere
open, so all of this is tested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libtmux

from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import FAST, run_turn

from .conftest import HttpSteps, start_tui


def session_on(tui: Any, server: libtmux.Server, sink: RecordingSink, *, pane: bool) -> Any:
    return open_session(
        pids=[tui.pid],
        cascade_id=tui.cascade_id,
        tmux_target=tui.pane_id if pane else None,
        tmux_server=server,
        sink=sink,
        options=FAST,
        poll_interval=0.05,
    )


def prompt_open(lines: list[str]) -> bool:
    return any(line.strip() == "$ pwd" for line in lines)


async def _answer_over_rpc_then_type(server: libtmux.Server, tmp_path: Path, *, pane: bool) -> list[str]:
    tui = await start_tui(server, tmp_path)
    sink = RecordingSink()
    await sink.answers.put(GateAnswer(allow=True))
    steps = HttpSteps(tui.base_url)
    try:
        async with session_on(tui, server, sink, pane=pane) as session:
            await run_turn(session, sink, "run: pwd", timeout=20)
            assert [g.kind for g in sink.asked] == ["permission"]
            if pane:
                await tui.wait_screen(lambda lines: not prompt_open(lines) and lines[-1].endswith("· idle"))
            else:
                await tui.wait_screen(prompt_open)  # still open: agy waits for keys
            tui.send_literal("Say hello in one short sentence.")
            tui.send_key("Enter")
            if pane:
                await steps.wait_steps(tui.cascade_id, lambda s: len([x for x in s if "userInput" in x]) == 2)
            else:
                await tui.wait_screen(lambda lines: any("not sent as a turn" in line for line in lines))
        return await steps.user_inputs(tui.cascade_id)
    finally:
        await steps.aclose()


async def test_with_agys_pane_the_prompt_is_closed_and_the_next_turn_arrives(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    assert await _answer_over_rpc_then_type(tmux_server, tmp_path, pane=True) == [
        "run: pwd",
        "Say hello in one short sentence.",
    ]


async def test_without_it_the_open_prompt_swallows_the_typed_turn(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    """The failure the dismissal fixes, shown by the simulated TUI."""
    assert await _answer_over_rpc_then_type(tmux_server, tmp_path, pane=False) == ["run: pwd"]


async def test_allow_always_goes_through_agys_menu_and_is_refused_without_the_pane(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    tui = await start_tui(tmux_server, tmp_path)
    steps = HttpSteps(tui.base_url)
    try:
        # without the pane: refused with a notice, nothing sent, agy still waits
        sink = RecordingSink()
        async with session_on(tui, tmux_server, sink, pane=False) as session:
            await session.send("run: pwd")
            await sink.wait_for(lambda: bool(sink.asked), 20)
            [gate] = [e for e in sink.events if isinstance(e, GateOpened)]
            assert gate.permission is not None and gate.permission.suggested_persist_pattern == "pwd"
            assert not await session.harness.answer(gate, GateAnswer(allow=True, persist="session"))
            assert any("allow always needs agy's pane" in getattr(e, "text", "") for e in sink.events)
            raw = await steps.read_steps(tui.cascade_id)
            assert raw[gate.step_index]["status"] == "CORTEX_STEP_STATUS_WAITING"
        # with it: typed into agy's menu (option 2), which answers the step
        sink = RecordingSink()
        await sink.answers.put(GateAnswer(allow=True, persist="session"))
        async with session_on(tui, tmux_server, sink, pane=True):
            await steps.wait_steps(
                tui.cascade_id,
                lambda s: s[gate.step_index]["status"] == "CORTEX_STEP_STATUS_DONE",
                timeout=20,
            )
        done = (await steps.read_steps(tui.cascade_id))[gate.step_index]
        assert done["completedInteractions"][-1]["response"]["permission"] == {"allow": True}
    finally:
        await steps.aclose()
