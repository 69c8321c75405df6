"""Issue 6's bar on the simulator: restarts lose and repeat nothing; /clear rotates; sub-agents do not."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.cursor_file import FileCursorStore
from tests.fakes import RecordingSink

from .helpers import assert_exactly_once, committed, harness_on, run_turn, signature, texts_by_message

STORY = "Write a long story about a lighthouse keeper."


async def clean_signature() -> tuple[list[str], list[object]]:
    async with Simulator(pace=0.15) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            await run_turn(session, sink, "Say hello in one short sentence.")
            await run_turn(session, sink, STORY)
    return signature(sink.events), [e for e in sink.events if e.type == "usage"][-1:]


async def test_a_harness_killed_mid_stream_and_restarted_delivers_everything_exactly_once(
    tmp_path: Path,
) -> None:
    clean, clean_usage = await clean_signature()
    store = FileCursorStore(tmp_path / "cursors")
    async with Simulator(pace=0.15) as sim:
        first = RecordingSink()
        async with harness_on(sim, first, cursor_store=store) as session:
            await run_turn(session, first, "Say hello in one short sentence.")
            await session.send(STORY)
            await first.wait_for(lambda: sum(e.type == "text_delta" for e in first.events) >= 8)
        # killed mid-stream (the reply goes on in agy); a new harness resumes from the cursor
        second = RecordingSink()
        async with harness_on(sim, second, cursor_store=store):
            await second.wait_for(
                lambda: any(e.type == "assistant_message" for e in second.events), timeout=20
            )
            await second.wait_for(lambda: second.events[-1].type == "status")
    union = first.events + second.events
    assert signature(union) == clean
    assert_exactly_once(union)
    deltas = [e.id for e in union if e.type == "text_delta"]
    assert len(deltas) == len(set(deltas))  # not even a delta twice
    story = [e for e in committed(union) if e.type == "assistant_message"][-1]
    assert texts_by_message(union)[story.message_id] == story.text  # type: ignore[union-attr]
    last_usage = [e for e in union if e.type == "usage"][-1]
    assert [last_usage.model_dump(exclude={"id", "cascade_id", "step_key"})] == [  # type: ignore[union-attr]
        u.model_dump(exclude={"id", "cascade_id", "step_key"}) for u in clean_usage
    ]  # type: ignore[attr-defined]


async def test_a_restart_between_turns_emits_nothing_already_delivered(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    async with Simulator() as sim:
        first = RecordingSink()
        async with harness_on(sim, first, cursor_store=store) as session:
            await run_turn(session, first, "Say hello in one short sentence.")
        second = RecordingSink()
        async with harness_on(sim, second, cursor_store=store) as session:
            await asyncio.sleep(0.3)  # the stream replays every step: all already delivered
            assert committed(second.events) == []
            await run_turn(session, second, "list the directory")
    assert [e.type for e in committed(second.events)][:2] == ["status", "user_message"]
    usage = [e for e in first.events + second.events if e.type == "usage"]
    assert usage[-1].cumulative_input_tokens > usage[0].cumulative_input_tokens  # type: ignore[union-attr]
    assert_exactly_once(first.events + second.events)


async def test_clear_rotates_and_the_next_turn_arrives_on_the_new_cascade(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        old = session.cascade_id
        await run_turn(session, sink, "Say hello in one short sentence.")
        new = await sim.clear()
        await asyncio.sleep(0.4)
        assert session.cascade_id == old  # a minted cascade nobody typed into is no rotation
        await sim.submit_user_turn("Say hello again.")  # typed in agy's TUI after /clear
        await sink.wait_for(lambda: any(e.type == "rotation" for e in sink.events))
        await sink.wait_for(
            lambda: any(e.type == "user_message" and e.cascade_id == new for e in sink.events)
        )
        assert session.cascade_id == new
        start = len(sink.events)
        await run_turn(session, sink, "list the directory")  # turn-send follows the rotation too
    [rotation] = [e for e in sink.events if e.type == "rotation"]
    assert (rotation.old_cascade_id, rotation.new_cascade_id) == (old, new)  # type: ignore[union-attr]
    assert {e.cascade_id for e in sink.events[start:]} == {new}
    assert [s["userInput"]["userResponse"] for s in sim.steps(new) if "userInput" in s] == [
        "Say hello again.",
        "list the directory",
    ]
    usage = [e for e in sink.events if e.type == "usage"]
    assert usage[-1].cumulative_input_tokens > usage[0].cumulative_input_tokens  # totals carried over  # type: ignore[union-attr]


async def test_a_sub_agent_is_mirrored_and_is_not_a_rotation(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        parent = session.cascade_id
        await run_turn(session, sink, "start a subagent to review the code")
        await sink.wait_for(lambda: any(e.type == "subagent" for e in sink.events))
        [link] = [e for e in sink.events if e.type == "subagent"]
        child = link.child_cascade_id  # type: ignore[union-attr]
        await sink.wait_for(
            lambda: any(e.type == "assistant_message" and e.cascade_id == child for e in sink.events),
            timeout=10,
        )
        await asyncio.sleep(0.3)
        assert session.cascade_id == parent
    assert not [e for e in sink.events if e.type == "rotation"]
    [call] = [e for e in sink.events if e.type == "tool_call" and "subagent" in e.name]  # type: ignore[union-attr]
    assert link.parent_call_id == call.call_id  # type: ignore[union-attr]
    child_events = [e for e in sink.events if e.cascade_id == child]
    assert [e.type for e in committed(child_events)][:3] == ["status", "model_change", "user_message"]
    assert "Review the code" in next(e for e in child_events if e.type == "user_message").text  # type: ignore[union-attr]


async def test_another_conversation_of_the_same_agy_is_not_a_rotation(sim: Simulator) -> None:
    other = await sim.start_cascade()  # existed when the harness bound
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        bound = session.cascade_id
        await run_turn(session, sink, "Say hello in one short sentence.")
        await sim.submit_user_turn("Say hello again.", cascade_id=other)  # newer activity, elsewhere
        await sim.wait_idle()
        await asyncio.sleep(0.5)  # several directory checks
        assert session.cascade_id == bound
    assert not [e for e in sink.events if e.type == "rotation"]
    assert {e.cascade_id for e in sink.events} == {bound}
