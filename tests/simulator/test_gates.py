"""Gates (permission, question), their timeouts and re-asks, and CancelCascadeSteps semantics."""

from __future__ import annotations

import json

import pytest

from agy_harness.adapters.simulator import Simulator

from .helpers import call, client, interaction, ok, short, until, waiting_index

WAITING = "CORTEX_STEP_STATUS_WAITING"


def reply(sim: Simulator) -> str:
    """The last text planner's reply."""
    planners = [s for s in sim.steps() if "response" in s.get("plannerResponse", {})]
    return str(planners[-1]["plannerResponse"]["response"])


def statuses(step: dict) -> list[str]:
    return [
        t["updatedStatus"].removeprefix("CORTEX_STEP_STATUS_")
        for t in step["metadata"]["internalMetadata"]["statusTransitions"]
    ]


async def test_permission_allowed_runs_the_command(sim: Simulator) -> None:
    await sim.submit_user_turn("run: pwd")
    await sim.wait_idle()
    i = waiting_index(sim)
    step = sim.steps()[i]
    assert short(step) == "RUN_COMMAND" and sim.is_running()
    assert short(sim.steps()[i - 1]) == "PLANNER_RESPONSE"
    assert (
        json.loads(sim.steps()[i - 1]["plannerResponse"]["toolCalls"][0]["argumentsJson"])["CommandLine"]
        == "pwd"
    )
    assert statuses(step) == ["PENDING", "WAITING"]
    async with client() as c:
        await ok(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, permission={"allow": True}))
    await sim.wait_idle()
    done = sim.steps()[i]
    assert done["status"] == "CORTEX_STEP_STATUS_DONE"
    assert statuses(done) == ["PENDING", "WAITING", "RUNNING", "DONE"]
    assert done["runCommand"]["combinedOutput"]["full"] == sim.workspace + "\n"
    assert done["runCommand"]["exitCode"] == 0
    assert done["requestedInteraction"]["permission"]["resource"] == {"action": "command", "target": "pwd"}
    assert done["permissions"]["permissionGrants"] == [
        {"resource": {"action": "command", "target": "pwd"}, "allow": True}
    ]
    [ci] = done["completedInteractions"]
    assert ci["response"] == {
        "trajectoryId": done["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"],
        "stepIndex": i,
        "permission": {"allow": True},
    }
    assert short(sim.steps()[-1]) == "CHECKPOINT"  # a first turn ends with the intent checkpoint
    assert "ran" in reply(sim)
    assert not sim.is_running()


async def test_permission_denied_ends_the_step_in_error(sim: Simulator) -> None:
    await sim.submit_user_turn("run: rm -rf build")
    await sim.wait_idle()
    i = waiting_index(sim)
    await sim.handle_interaction(
        sim.cascade_id, interaction(sim, i, permission={"allow": False})["interaction"]
    )
    await sim.wait_idle()
    step = sim.steps()[i]
    assert step["status"] == "CORTEX_STEP_STATUS_ERROR"
    assert statuses(step)[-1] == "ERROR"
    assert "combinedOutput" not in step["runCommand"]
    assert step["completedInteractions"][0]["response"]["permission"] == {}
    assert step["permissions"]["permissionGrants"] == [
        {"resource": {"action": "command", "target": "rm -rf build"}}
    ]
    assert "denied" in reply(sim)


async def test_chained_command_asks_two_gates_in_turn(sim: Simulator) -> None:
    await sim.submit_user_turn("run: git status && git log -n 5 --oneline")
    await sim.wait_idle()
    first = waiting_index(sim)
    planner = sim.steps()[first - 1]
    assert [
        json.loads(c["argumentsJson"])["CommandLine"] for c in planner["plannerResponse"]["toolCalls"]
    ] == ["git status", "git log -n 5 --oneline"]
    assert sim.steps()[first]["requestedInteraction"]["permission"]["resource"]["target"] == "git status"
    await sim.handle_interaction(
        sim.cascade_id, interaction(sim, first, permission={"allow": True})["interaction"]
    )
    await until(lambda: any(s["status"] == WAITING for s in sim.steps()[first + 1 :]))
    second = waiting_index(sim)
    assert second > first
    assert sim.steps()[first]["status"] == "CORTEX_STEP_STATUS_DONE"
    assert (
        sim.steps()[second]["requestedInteraction"]["permission"]["resource"]["target"]
        == "git log -n 5 --oneline"
    )
    await sim.handle_interaction(
        sim.cascade_id, interaction(sim, second, permission={"allow": True})["interaction"]
    )
    await sim.wait_idle()
    assert sim.steps()[second]["status"] == "CORTEX_STEP_STATUS_DONE"
    assert not sim.is_running()


async def test_question_single_select(sim: Simulator) -> None:
    await sim.submit_user_turn("ask: which part should we work on first?")
    await sim.wait_idle()
    i = waiting_index(sim)
    step = sim.steps()[i]
    assert short(step) == "ASK_QUESTION"
    assert statuses(step) == ["PENDING", "RUNNING", "WAITING"]
    q = step["requestedInteraction"]["askQuestion"]["questions"][0]
    assert q["question"] == "Which part should we work on first?"
    assert [o["id"] for o in q["options"]] == ["1", "2", "3"]
    args = json.loads(step["metadata"]["toolCall"]["argumentsJson"])
    assert args["questions"][0]["is_multi_select"] is False
    answer = {"responses": [{"question": q["question"], "selectedOptionIds": ["2"]}]}
    async with client() as c:
        await ok(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, askQuestion=answer))
    await sim.wait_idle()
    done = sim.steps()[i]
    assert done["status"] == "CORTEX_STEP_STATUS_DONE"
    assert done["askQuestion"]["questions"][0]["selectedOptionIds"] == ["2"]
    assert done["completedInteractions"][0]["response"]["askQuestion"] == answer
    assert "requestedInteraction" in done
    assert q["options"][1]["text"] in reply(sim)


async def test_question_multi_select_and_write_in(sim: Simulator) -> None:
    await sim.submit_user_turn("ask multiple: which checks should run?")
    await sim.wait_idle()
    i = waiting_index(sim)
    step = sim.steps()[i]
    args = json.loads(step["metadata"]["toolCall"]["argumentsJson"])
    assert args["questions"][0]["is_multi_select"] is True
    assert [o["id"] for o in step["askQuestion"]["questions"][0]["options"]] == ["1", "2", "3", "4"]
    q = step["askQuestion"]["questions"][0]["question"]
    answer = {"responses": [{"question": q, "selectedOptionIds": ["1", "3"], "writeInResponse": "and docs"}]}
    await sim.handle_interaction(sim.cascade_id, interaction(sim, i, askQuestion=answer)["interaction"])
    await sim.wait_idle()
    done = sim.steps()[i]["askQuestion"]["questions"][0]
    assert done["selectedOptionIds"] == ["1", "3"] and done["writeInResponse"] == "and docs"
    text = reply(sim)
    assert "Linting" in text and "Unit tests" in text and "and docs" in text


async def test_gate_timeout_errors_and_reasks_at_a_higher_index() -> None:
    async with Simulator(gate_timeout=0.1, gate_reasks=1, pace=0.0) as sim:
        await sim.submit_user_turn("run: pwd")
        await sim.wait_idle()
        first = waiting_index(sim)
        trajectory = sim.steps()[first]["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"]
        await until(lambda: len(sim.steps()) > first + 1 and sim.steps()[-1]["status"] == WAITING)
        second = waiting_index(sim)
        # answer the re-ask at once, in process: it times out too after 0.1 s, and under load an HTTP
        # round-trip first could take that long
        await sim.handle_interaction(
            sim.cascade_id, interaction(sim, second, permission={"allow": True})["interaction"]
        )
        old, new = sim.steps()[first], sim.steps()[second]
        assert second > first
        assert old["status"] == "CORTEX_STEP_STATUS_ERROR" and statuses(old) == [
            "PENDING",
            "WAITING",
            "ERROR",
        ]
        assert new["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"] == trajectory
        assert new["requestedInteraction"] == old["requestedInteraction"]
        async with client() as c:
            stale = await call(
                c, sim, "HandleCascadeUserInteraction", interaction(sim, first, permission={"allow": True})
            )
            assert stale.status_code == 500
            assert stale.json()["message"] == f"input not registered for step {first}"
        await sim.wait_idle()
        assert sim.steps()[second]["status"] == "CORTEX_STEP_STATUS_DONE"


async def test_gate_timeout_gives_up_after_the_reasks() -> None:
    async with Simulator(gate_timeout=0.05, gate_reasks=1, pace=0.0) as sim:
        await sim.submit_user_turn("run: pwd")
        await until(lambda: not sim.is_running(), timeout=5)
        runs = [s for s in sim.steps() if short(s) == "RUN_COMMAND"]
        assert [s["status"] for s in runs] == ["CORTEX_STEP_STATUS_ERROR"] * 2
        assert "in time" in reply(sim)


async def test_a_gate_timed_out_by_the_test_is_re_asked_as_after_gate_timeout() -> None:
    async with Simulator(gate_timeout=None, gate_reasks=1, pace=0.0) as sim:
        with pytest.raises(KeyError):
            sim.time_out_gate()  # nothing waits yet
        await sim.submit_user_turn("run: pwd")
        await sim.wait_idle()
        first = waiting_index(sim)
        assert sim.time_out_gate() == first
        await until(lambda: len(sim.steps()) > first + 1 and sim.steps()[-1]["status"] == WAITING)
        second = waiting_index(sim)
        old, new = sim.steps()[first], sim.steps()[second]
        assert second > first and statuses(old) == ["PENDING", "WAITING", "ERROR"]
        assert new["requestedInteraction"] == old["requestedInteraction"]
        assert sim.time_out_gate() == second  # the last re-ask: the turn gives up, as after the timeouts
        await until(lambda: not sim.is_running(), timeout=5)
        runs = [s for s in sim.steps() if short(s) == "RUN_COMMAND"]
        assert [s["status"] for s in runs] == ["CORTEX_STEP_STATUS_ERROR"] * 2
        assert "in time" in reply(sim)


async def test_cancel_does_not_free_a_waiting_gate(sim: Simulator) -> None:
    await sim.submit_user_turn("run: pwd")
    await sim.wait_idle()
    i = waiting_index(sim)
    async with client() as c:
        await ok(c, sim, "CancelCascadeSteps", {"cascadeId": sim.cascade_id})
    await sim.wait_idle()
    assert sim.steps()[i]["status"] == WAITING and sim.is_running()
    await sim.handle_interaction(
        sim.cascade_id, interaction(sim, i, permission={"allow": True})["interaction"]
    )
    await sim.wait_idle()
    assert sim.steps()[i]["status"] == "CORTEX_STEP_STATUS_DONE"


async def test_cancel_stops_a_generating_planner_and_ends_the_turn() -> None:
    async with Simulator(pace=0.5) as sim, client() as c:
        await sim.submit_user_turn("Write a long story about a lighthouse keeper.")
        await until(lambda: any("modifiedResponse" in s.get("plannerResponse", {}) for s in sim.steps()))
        await ok(c, sim, "CancelCascadeSteps", {"cascadeId": sim.cascade_id})
        await sim.wait_idle()
        planner = sim.steps()[-1]
        assert short(planner) == "PLANNER_RESPONSE"
        assert planner["status"] == "CORTEX_STEP_STATUS_CANCELED"
        assert statuses(planner) == ["GENERATING", "CANCELED"]
        partial = planner["plannerResponse"]["modifiedResponse"]
        assert partial and len(partial) < 200 and "response" not in planner["plannerResponse"]
        assert not sim.is_running()
        assert [short(s) for s in sim.steps()] == ["USER_INPUT", "CONVERSATION_HISTORY", "PLANNER_RESPONSE"]
        # the cascade takes the next turn normally
        await sim.submit_user_turn("hello")
        await until(lambda: not sim.is_running())
        assert sim.steps()[-1]["status"] == "CORTEX_STEP_STATUS_DONE"
