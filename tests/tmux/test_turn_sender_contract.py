"""One contract for every TurnSender: against the simulated agy TUI (which hosts the simulator), a
send produces exactly one USER_INPUT with the sent text, and the model's reply follows."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agy_harness.adapters.tmux import TmuxTurnSender
from agy_harness.ports.protocols import TurnSender

from .conftest import HttpSteps, TuiPane, is_idle
from .test_tui import turn_done


@pytest.fixture(params=["tmux", "rpc"])
async def turn_sender(
    request: pytest.FixtureRequest, tui: TuiPane, rpc: HttpSteps
) -> AsyncIterator[TurnSender]:
    if request.param == "tmux":
        yield TmuxTurnSender(tui.pane_id, server=tui.server, step_reader=rpc)
        return
    from agy_harness.adapters.rpc.actions import PlanModelResolver, RpcModelCatalog, RpcTurnSender
    from agy_harness.adapters.rpc.client import RpcClient
    from agy_harness.adapters.rpc.sources import RpcPollSource

    client = RpcClient(tui.base_url)
    try:
        yield RpcTurnSender(client, PlanModelResolver(RpcPollSource(client), RpcModelCatalog(client)))
    finally:
        await client.aclose()


async def test_sender_is_a_turn_sender(turn_sender: TurnSender) -> None:
    assert isinstance(turn_sender, TurnSender)
    assert turn_sender.name in ("tmux", "rpc")


async def test_one_user_input_with_the_text_and_a_reply(
    turn_sender: TurnSender, tui: TuiPane, rpc: HttpSteps
) -> None:
    text = "Say hi to the contract\nin two lines"
    await turn_sender.send(tui.cascade_id, text)
    steps = await rpc.wait_steps(tui.cascade_id, turn_done)
    users = [i for i, s in enumerate(steps) if s.get("type") == "CORTEX_STEP_TYPE_USER_INPUT"]
    assert len(users) == 1
    assert await rpc.user_inputs(tui.cascade_id) == [text]
    replies = [s for s in steps[users[0] + 1 :] if s.get("type") == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"]
    assert replies and "Say hi to the contract" in replies[-1]["plannerResponse"]["response"]
    # the TUI shows the turn, whoever sent it, and is ready again
    screen = await tui.wait_screen(is_idle)
    assert "› Say hi to the contract" in screen


async def test_a_second_turn_is_a_second_user_input(
    turn_sender: TurnSender, tui: TuiPane, rpc: HttpSteps
) -> None:
    await turn_sender.send(tui.cascade_id, "Say hi once")
    await rpc.wait_steps(tui.cascade_id, turn_done)
    await tui.wait_screen(is_idle)
    await turn_sender.send(tui.cascade_id, "Say hi twice")
    steps = await rpc.wait_steps(
        tui.cascade_id,
        lambda s: turn_done(s) and sum(x.get("type") == "CORTEX_STEP_TYPE_USER_INPUT" for x in s) == 2,
    )
    assert turn_done(steps)
    assert await rpc.user_inputs(tui.cascade_id) == ["Say hi once", "Say hi twice"]
