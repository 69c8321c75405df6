"""The contracts of the ports that act on agy, held by the RPC adapters (on the simulator) and by the
tests' fakes (tests/fakes/) alike: InteractionDelivery, TurnSender (tests/tmux/
test_turn_sender_contract.py holds the tmux sender and the RPC one to agy's TUI too), Interrupter.
Each case observes what its agy recorded: the simulator's steps, or what the fake was given."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agy_harness.adapters.rpc.actions import (
    PlanModelResolver,
    RpcInteractionDelivery,
    RpcInterrupter,
    RpcModelCatalog,
    RpcTurnSender,
)
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.ports.protocols import InteractionDelivery, InteractionRejected, Interrupter, TurnSender
from tests.fakes import RecordingDelivery, RecordingInterrupter, RecordingSender

from .conftest import Agy


async def waiting_permission(agy: Agy) -> dict[str, Any]:
    await agy.sim.submit_user_turn("run: pwd")
    async with asyncio.timeout(10):
        while not [s for s in agy.steps_of("RUN_COMMAND") if s["status"] == "CORTEX_STEP_STATUS_WAITING"]:
            await asyncio.sleep(0.01)
    [step] = agy.steps_of("RUN_COMMAND")
    info = step["metadata"]["sourceTrajectoryStepInfo"]
    return {
        "trajectoryId": info["trajectoryId"],
        "stepIndex": info["stepIndex"],
        "permission": {"allow": True},
    }


# -- InteractionDelivery ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rpc", "recording"])
async def test_an_answer_reaches_the_waiting_step_once_and_a_second_is_rejected(kind: str, agy: Agy) -> None:
    interaction = await waiting_permission(agy)
    fake = RecordingDelivery()
    delivery: InteractionDelivery = RpcInteractionDelivery(agy.client) if kind == "rpc" else fake
    assert isinstance(delivery, InteractionDelivery)
    await delivery.deliver(agy.cascade_id, dict(interaction))
    if kind == "rpc":
        await agy.sim.wait_idle(10)
        [step] = agy.steps_of("RUN_COMMAND")
        assert step["completedInteractions"][0]["response"]["permission"] == {"allow": True}
    else:
        assert fake.delivered == [interaction]
        fake.reject.append(InteractionRejected("input not registered for step", status=500))  # it is answered
    with pytest.raises(InteractionRejected) as refused:  # the step no longer waits
        await delivery.deliver(agy.cascade_id, dict(interaction))
    assert refused.value.status == 500 and "input not registered" in refused.value.message


# -- TurnSender ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rpc", "recording"])
async def test_a_turn_is_one_user_input_with_the_text(kind: str, agy: Agy) -> None:
    fake = RecordingSender("recording")
    resolver = PlanModelResolver(RpcPollSource(agy.client), RpcModelCatalog(agy.client))
    sender: TurnSender = RpcTurnSender(agy.client, resolver) if kind == "rpc" else fake
    assert isinstance(sender, TurnSender) and sender.name
    text = "Say hi to the contract\nin two lines"
    await sender.send(agy.cascade_id, text)
    if kind == "rpc":
        [user] = agy.steps_of("USER_INPUT")
        sent = [user["userInput"]["userResponse"]]
    else:
        sent = fake.texts
    assert sent == [text]


# -- Interrupter --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rpc", "recording"])
async def test_an_interrupt_stops_the_running_turn_and_is_harmless_when_idle(kind: str, agy: Agy) -> None:
    fake = RecordingInterrupter()
    interrupter: Interrupter = RpcInterrupter(agy.client) if kind == "rpc" else fake
    assert isinstance(interrupter, Interrupter)
    await interrupter.interrupt(agy.cascade_id)  # nothing runs: no error
    await agy.sim.submit_user_turn("Write a long story about a lighthouse keeper.")
    await asyncio.sleep(0.05)  # agy is writing it
    await interrupter.interrupt(agy.cascade_id)
    if kind == "rpc":
        await agy.sim.wait_idle(10)
        [reply] = agy.steps_of("PLANNER_RESPONSE")
        assert reply["status"] == "CORTEX_STEP_STATUS_CANCELED"  # the story was cut, not finished
    else:
        assert fake.interrupted == [agy.cascade_id, agy.cascade_id]
