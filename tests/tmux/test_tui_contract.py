"""The TuiKeys and TuiScreen contract, held by agy's tmux pane (TmuxKeys, TmuxScreen, on the simulated
agy TUI) and the tests' ScriptedPane: the screen as rows; a prompt recognised only for its own
request; nothing but digits, Enter and Escape ever typed; the keys answer the prompt."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from agy_harness.adapters.tmux.keys import TmuxKeys
from agy_harness.adapters.tmux.pane_screen import TmuxScreen
from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import TuiKeys, TuiScreen
from tests.fakes import ScriptedPane

from .conftest import HttpSteps, TuiPane, is_idle


@dataclass
class PaneCase:
    keys: TuiKeys
    screen: TuiScreen
    gate: GateOpened  # a permission agy waits on, its prompt on the pane
    other: GateOpened  # another request: not the one the pane shows

    async def answered(self) -> bool:
        return not await self.keys.shows_prompt(self.gate)


async def waiting_gate(tui: TuiPane, rpc: HttpSteps) -> GateOpened:
    await tui.wait_screen(is_idle)
    tui.send_literal("run: pwd")
    tui.send_key("Enter")
    steps = await rpc.wait_steps(
        tui.cascade_id, lambda s: any(x.get("status") == "CORTEX_STEP_STATUS_WAITING" for x in s)
    )
    [gate] = [e for e in Reconciler(tui.cascade_id).feed_all(steps) if isinstance(e, GateOpened)]
    await tui.wait_screen(lambda lines: any("pwd" in line for line in lines))
    return gate


@pytest.fixture(params=["tmux", "scripted"])
async def pane(request: pytest.FixtureRequest, tui: TuiPane, rpc: HttpSteps) -> AsyncIterator[PaneCase]:
    gate = await waiting_gate(tui, rpc)
    assert gate.permission is not None
    asks_else = gate.permission.model_copy(update={"command_line": "rm -rf ~/work"})
    other = gate.model_copy(update={"gate_id": gate.gate_id + "-other", "permission": asks_else})
    if request.param == "tmux":
        yield PaneCase(TmuxKeys(tui.pane_id, tui.server), TmuxScreen(tui.pane_id, tui.server), gate, other)
        return
    scripted = ScriptedPane(rows=tui.capture(), prompt_for=gate.gate_id)
    yield PaneCase(scripted, scripted, gate, other)


async def test_the_screen_is_rows_of_text(pane: PaneCase) -> None:
    assert isinstance(pane.screen, TuiScreen) and isinstance(pane.keys, TuiKeys)
    rows = await pane.screen.screen()
    assert rows and all(isinstance(r, str) for r in rows) and any("pwd" in r for r in rows)


async def test_a_prompt_is_recognised_only_for_its_own_request(pane: PaneCase) -> None:
    assert await pane.keys.shows_prompt(pane.gate)
    assert not await pane.keys.shows_prompt(pane.other)


async def test_only_digits_enter_and_escape_are_typed(pane: PaneCase) -> None:
    for keys in (["y"], ["1", "rm -rf ~"], ["C-c"]):
        with pytest.raises(ValueError, match="only digits, Enter, Escape"):
            await pane.keys.send_keys(keys)
    assert await pane.keys.shows_prompt(pane.gate)  # nothing was typed


async def test_the_keys_answer_the_prompt(pane: PaneCase, tui: TuiPane, rpc: HttpSteps) -> None:
    await pane.keys.send_keys(["1", "Enter"])
    async with asyncio.timeout(10):
        while not await pane.answered():
            await asyncio.sleep(0.05)
    if isinstance(pane.keys, TmuxKeys):  # agy recorded the allow
        steps = await rpc.wait_steps(
            tui.cascade_id, lambda s: all(x.get("status") != "CORTEX_STEP_STATUS_WAITING" for x in s)
        )
        [command] = [s for s in steps if s.get("type") == "CORTEX_STEP_TYPE_RUN_COMMAND"]
        assert command["completedInteractions"][0]["response"]["permission"]["allow"] is True
