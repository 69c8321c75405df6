"""Issue 5's bar on the simulator: questions, approvals, timeouts, shape errors, interrupts, turn-send."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer, InteractionRejected
from tests.fakes import RecordingSink

from .helpers import FAST, harness_on, run_turn


def of(events: list[Event], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def user_inputs(sim: Simulator) -> list[dict[str, Any]]:
    return [s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_USER_INPUT"]


async def test_question_round_trip_multi_select_and_write_in_through_the_public_api(sim: Simulator) -> None:
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s:
        await s.send("ask multiple: which checks should run?")
        events: list[Event] = []
        async for event in s.events():
            events.append(event)
            if isinstance(event, GateOpened):
                [q] = event.questions
                assert q.multi_select and [o.id for o in q.options] == ["1", "2", "3", "4"]
                await s.answer(event.gate_id, [["1", "Unit tests", "and a fuzzer"]])
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    [question] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION"]
    [response] = question["completedInteractions"][0]["response"]["askQuestion"]["responses"]
    assert response == {
        "question": "Which checks should run?",
        "selectedOptionIds": ["1", "3"],
        "writeInResponse": "and a fuzzer",
    }
    assert of(events, "assistant_message")[-1].text == "You chose: Linting, Unit tests, and a fuzzer."
    assert [e.type for e in events if e.type.startswith("gate")] == ["gate_opened", "gate_withdrawn"]


async def test_an_approval_and_a_denial(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        await sink.answers.put(GateAnswer(allow=True))
        await run_turn(session, sink, "run: git status")
        await sink.answers.put(GateAnswer(allow=False))
        await run_turn(session, sink, "run: rm -rf build")
    results = of(sink.events, "tool_result")
    assert [(r.name, r.is_error) for r in results] == [("run_command", False), ("run_command", True)]
    assert "On branch main" in results[0].output
    assert results[1].output == "run_command was not run: permission denied"
    assert [g.permission.command_line for g in sink.asked] == ["git status", "rm -rf build"]
    assert (
        "did not run" in of(sink.events, "assistant_message")[-1].text
        or "not run" in of(sink.events, "assistant_message")[-1].text
    )


async def test_chained_gates_all_surface_one_at_a_time(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        for _ in range(2):
            await sink.answers.put(GateAnswer(allow=True))
        await run_turn(session, sink, "run: git status && git log -n 5 --oneline")
    assert [g.permission.command_line for g in sink.asked] == ["git status", "git log -n 5 --oneline"]
    assert [r.is_error for r in of(sink.events, "tool_result")] == [False, False]


async def test_a_gate_that_times_out_while_the_human_thinks_goes_to_the_retry_step() -> None:
    async with Simulator(gate_timeout=0.4, pace=0.05) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            await session.send("run: git status")
            await sink.wait_for(lambda: len(sink.asked) >= 1)
            first = sink.asked[0]
            # the human is slow: agy times the step out and re-asks it at a higher stepIndex
            await sink.wait_for(lambda: len(sink.asked) >= 2)
            assert first.gate_id in sink.cancelled  # withdrawn from the human
            # the late answer to the FIRST prompt still lands, on agy's retry
            assert await session.harness.answer(first, GateAnswer(allow=True))
            await sink.wait_for(
                lambda: (
                    of(sink.events, "tool_result") and of(sink.events, "tool_result")[-1].is_error is False
                ),
            )
    retry = sink.asked[1]
    assert retry.step_index > first.step_index
    steps = {s["metadata"]["sourceTrajectoryStepInfo"].get("stepIndex"): s for s in sim.steps()}
    assert steps[first.step_index]["status"] == "CORTEX_STEP_STATUS_ERROR"
    done = [
        s
        for s in sim.steps()
        if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND" and s["status"] == "CORTEX_STEP_STATUS_DONE"
    ]
    assert len(done) == 1
    assert done[0]["completedInteractions"][0]["response"]["permission"] == {"allow": True}


class MisplacedTrajectoryDelivery:
    """A broken client: ``trajectoryId`` outside ``interaction``, which proto-JSON silently drops."""

    def __init__(self, client: RpcClient) -> None:
        self.client = client
        self.calls = 0

    async def deliver(self, cascade_id: str, interaction: dict[str, Any]) -> None:
        self.calls += 1
        body = {
            "cascadeId": cascade_id,
            "trajectoryId": interaction.pop("trajectoryId"),
            "interaction": interaction,
        }
        try:
            await self.client.call("HandleCascadeUserInteraction", body)
        except Exception as exc:
            raise InteractionRejected(
                getattr(exc, "message", str(exc)), status=getattr(exc, "status", 0)
            ) from exc


async def test_a_500_shape_error_is_reported_once(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session, RpcClient(session.base_url) as client:
        broken = MisplacedTrajectoryDelivery(client)
        session.harness.delivery = broken
        await sink.answers.put(GateAnswer(allow=True))
        await session.send("run: pwd")
        await sink.wait_for(lambda: of(sink.events, "notice"))
        await asyncio.sleep(0.3)
        notices = of(sink.events, "notice")
        assert len(notices) == 1 and notices[0].level == "error"
        assert "input not registered for step" in notices[0].text
        assert broken.calls == 1
        waiting = [s for s in sim.steps() if s["status"] == "CORTEX_STEP_STATUS_WAITING"]
        assert len(waiting) == 1  # agy still waits: nothing was delivered


async def test_interrupt_during_generation() -> None:
    async with Simulator(pace=0.3) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            await session.send("Write a long story about a lighthouse keeper.")
            await sink.wait_for(lambda: len(of(sink.events, "text_delta")) >= 2)
            report = await session.interrupt()
            await sink.wait_for(lambda: of(sink.events, "status")[-1].status == "idle")
            assert report.cancelled and report.denied_gates == ()
            n = len(of(sink.events, "text_delta"))
            await asyncio.sleep(0.3)
            assert len(of(sink.events, "text_delta")) == n  # the model stopped writing
    [planner] = [s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"]
    assert planner["status"] == "CORTEX_STEP_STATUS_CANCELED"
    [notice] = of(sink.events, "notice")
    assert notice.text == "interrupted: agy cancelled the running steps"
    # the notice follows the reply's last text (it came after it at --pace 0: issue 47)
    assert sink.events.index(notice) > sink.events.index(of(sink.events, "text_delta")[-1])


class CancelAfterTheTurn:
    """agy's cancel held until agy has finished the turn (what ``--pace 0`` makes likely): the
    harness decided to interrupt from its view, which lags behind agy."""

    def __init__(self, sim: Simulator, real: Any) -> None:
        self.sim, self.real = sim, real

    async def interrupt(self, cascade_id: str) -> None:
        while not any(
            s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE" and s["status"] == "CORTEX_STEP_STATUS_DONE"
            for s in self.sim.steps()
        ):
            await asyncio.sleep(0.01)
        await self.real.interrupt(cascade_id)


async def test_an_interrupt_that_reaches_agy_after_the_reply_says_agy_had_finished() -> None:
    """Issue 47: at --pace 0 the notice said "cancelled the running steps" while agy had finished
    the reply, whose last text then arrived after the notice. Fails before the fix (it said cancelled,
    before the reply's end)."""
    async with Simulator(pace=0) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            turns = session.harness.turns
            turns.interrupter = CancelAfterTheTurn(sim, turns.interrupter)
            await session.send("Say hello in one short sentence.")
            report = await session.interrupt()
            assert report.detail == "agy had already finished the reply: nothing was left to interrupt"
            [notice] = of(sink.events, "notice")
            assert notice.text == report.detail
            assert sink.events.index(notice) > sink.events.index(of(sink.events, "assistant_message")[-1])
    [planner] = [s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"]
    assert planner["status"] == "CORTEX_STEP_STATUS_DONE"  # nothing was cancelled: the notice is true


async def test_interrupt_during_a_parked_gate_denies_it(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        await session.send("run: git status")
        await sink.wait_for(lambda: sink.asked)
        report = await session.interrupt()
        await sink.wait_for(
            lambda: of(sink.events, "status") and of(sink.events, "status")[-1].status == "idle"
        )
    assert report.denied_gates == (sink.asked[0].gate_id,)
    [command] = [s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
    assert command["status"] == "CORTEX_STEP_STATUS_ERROR"
    assert command["completedInteractions"][0]["response"]["permission"] == {}
    assert sink.cancelled == [sink.asked[0].gate_id]


async def test_rpc_turn_send_produces_exactly_one_user_input(sim: Simulator) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink) as session:
        await run_turn(session, sink, "Say hello in one short sentence.")
        assert session.harness.turn_senders[0].name == "rpc"
    [user] = user_inputs(sim)
    assert user["userInput"]["userResponse"] == "Say hello in one short sentence."
    # planModel resolved at runtime from the catalog (no earlier USER_INPUT)
    assert user["userInput"]["userConfig"]["plannerConfig"]["planModel"] == "MODEL_PLACEHOLDER_M20"
    assert len(of(sink.events, "user_message")) == 1
