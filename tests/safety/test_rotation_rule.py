"""Finding 4: a session follows /clear only on positive evidence that its own agy terminal rotated."""

from __future__ import annotations

import asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.service.conversation import HarnessOptions
from tests.fakes import RecordingSink
from tests.integration.helpers import FAST, harness_on, run_turn


async def test_a_conversation_another_session_opened_later_is_not_a_clear(sim: Simulator) -> None:
    first_sink = RecordingSink()
    async with harness_on(sim, first_sink) as first:
        bound = first.cascade_id
        await run_turn(first, first_sink, "Say hello in one short sentence.")
        for _ in range(3):  # sessions of this library opened one by one, each on a new conversation
            other = await sim.start_cascade()  # minted after `first` bound
            sim.cascade_id = other
            other_sink = RecordingSink()
            async with harness_on(sim, other_sink) as later:
                assert later.cascade_id == other
                await run_turn(later, other_sink, "Say hi from another client.")
                await asyncio.sleep(0.4)  # several directory checks of `first`
                assert first.cascade_id == bound  # it used to rotate onto `other`
    assert not [e for e in first_sink.events if e.type == "rotation"]
    assert {e.cascade_id for e in first_sink.events} == {bound}


async def test_two_fresh_conversations_are_ambiguous_not_a_clear(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        bound = session.cascade_id
        await run_turn(session, sink, "Say hello in one short sentence.")
        for _ in range(2):  # some other client (not this library) at work on the same agy
            other = await sim.start_cascade()
            await sim.submit_user_turn("Say hi elsewhere.", cascade_id=other)
        await sim.wait_idle()
        await sink.wait_for(
            lambda: any(e.type == "notice" and "not following" in e.text for e in sink.events)
        )  # type: ignore[union-attr]
        assert session.cascade_id == bound
    assert not [e for e in sink.events if e.type == "rotation"]


async def test_following_clear_is_an_option(sim: Simulator) -> None:
    sink = RecordingSink()
    options = HarnessOptions(**{**FAST.__dict__, "follow_clear": False})
    async with harness_on(sim, sink, options=options) as session:
        bound = session.cascade_id
        await run_turn(session, sink, "Say hello in one short sentence.")
        await sim.submit_user_turn("/clear")
        await sim.submit_user_turn("Say hello again.")  # typed in agy's TUI after /clear
        await sim.wait_idle()
        await asyncio.sleep(0.5)
        assert session.cascade_id == bound
    assert not [e for e in sink.events if e.type == "rotation"]
