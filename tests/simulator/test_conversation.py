"""The scripted model's conversations: step order and identities, tools, sub-agents, /clear."""

from __future__ import annotations

import json

import pytest

from agy_harness.adapters.simulator import Simulator, plan_for

from .helpers import client, ok, short

TYPE = "CORTEX_STEP_TYPE_"


def info(step: dict) -> dict:
    return dict(step["metadata"]["sourceTrajectoryStepInfo"])


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("Say hello in one short sentence.", []),
        ("run: pwd", [("run", "pwd")]),
        ("run: git status && git log -n 5 --oneline", [("run", "git status && git log -n 5 --oneline")]),
        (
            "Please run the command pwd and list the directory, then summarise.",
            [("run", "pwd"), ("list", "")],
        ),
        ("autorun: ls", [("autorun", "ls")]),
        ("ask: which part should we work on first?", [("ask", "Which part should we work on first?")]),
        ("ask multiple: which checks should run?", [("ask", "Which checks should run?")]),
        ("view src/app.py", [("view", "src/app.py")]),
        ("start a subagent", [("subagent", "Code Reviewer")]),
        ("run `cat notes.txt` and view README.md", [("run", "cat notes.txt"), ("view", "README.md")]),
    ],
)
def test_keywords(text: str, kinds: list[tuple[str, str]]) -> None:
    assert [(a.kind, a.arg) for a in plan_for(text).actions] == kinds


async def test_turn_sequence_indices_and_execution_ids(sim: Simulator) -> None:
    await sim.submit_user_turn("Say hello in one short sentence.")
    await sim.wait_idle()
    await sim.submit_user_turn("list the directory")
    await sim.wait_idle()
    steps = sim.steps()
    assert [short(s) for s in steps] == [
        "USER_INPUT",
        "CONVERSATION_HISTORY",
        "PLANNER_RESPONSE",
        "CHECKPOINT",
        "USER_INPUT",
        "PLANNER_RESPONSE",
        "LIST_DIRECTORY",
        "PLANNER_RESPONSE",
    ]
    infos = [info(s) for s in steps]
    assert "stepIndex" not in infos[0] and "stepIndex" not in infos[4]  # USER_INPUT has none
    assert [i.get("stepIndex") for i in infos] == [None, 1, 2, 3, None, 5, 6, 7]
    assert [i.get("metadataIndex", 0) for i in infos] == [0, 0, 0, 1, 0, 1, 1, 2]
    assert {i["cascadeId"] for i in infos} == {sim.cascade_id}
    assert len({i["trajectoryId"] for i in infos}) == 1
    turn1 = {s["metadata"]["executionId"] for s in steps[:4]}
    turn2 = {s["metadata"]["executionId"] for s in steps[4:]}
    assert len(turn1) == 1 and len(turn2) == 1 and turn1 != turn2
    assert steps[3]["checkpoint"]["userRequests"] == ["Say hello in one short sentence."]
    assert steps[3]["checkpoint"]["includedStepIndexEnd"] == 3
    tool = steps[6]
    assert tool["metadata"]["toolCall"] == steps[5]["plannerResponse"]["toolCalls"][0]
    assert json.loads(tool["metadata"]["toolCall"]["argumentsJson"])["DirectoryPath"] == sim.workspace
    assert tool["listDirectory"]["directoryPathUri"] == f"file://{sim.workspace}"
    assert tool["metadata"]["argumentsOrder"] == ["DirectoryPath", "toolAction", "toolSummary"]
    assert tool["metadata"]["toolAction"] and tool["metadata"]["toolSummary"]
    usage = [s["metadata"]["modelUsage"] for s in steps if short(s) == "PLANNER_RESPONSE"]
    assert len(usage) == 3 and all(isinstance(u["inputTokens"], str) for u in usage)
    assert len({u["responseId"] for u in usage}) == 3


async def test_view_file(sim: Simulator) -> None:
    await sim.submit_user_turn("view README.md")
    await sim.wait_idle()
    [step] = [s for s in sim.steps() if short(s) == "VIEW_FILE"]
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert step["viewFile"]["absolutePathUri"] == f"file://{sim.workspace}/README.md"
    assert (
        json.loads(step["metadata"]["toolCall"]["argumentsJson"])["AbsolutePath"]
        == f"{sim.workspace}/README.md"
    )


async def test_autorun_has_no_gate(sim: Simulator) -> None:
    await sim.submit_user_turn("autorun: git status")
    await sim.wait_idle()
    [step] = [s for s in sim.steps() if short(s) == "RUN_COMMAND"]
    assert step["status"] == "CORTEX_STEP_STATUS_DONE" and "requestedInteraction" not in step
    assert step["runCommand"]["combinedOutput"]["full"].startswith("On branch main")
    assert not sim.is_running()


async def test_subagent_spawns_a_child_cascade(sim: Simulator) -> None:
    await sim.submit_user_turn("start a subagent to review the code")
    await sim.wait_idle()
    [generic] = [s for s in sim.steps() if short(s) == "GENERIC"]
    assert generic["metadata"]["toolCall"]["name"] == "invoke_subagent"
    [child] = sim.children()
    assert child in generic["generic"]["result"]["result"]
    async with client() as c:
        summaries = (await ok(c, sim, "GetAllCascadeTrajectories"))["trajectorySummaries"]
        meta = await ok(c, sim, "GetConversationMetadata", {"conversationId": child})
        child_steps = (await ok(c, sim, "GetCascadeTrajectorySteps", {"cascadeId": child}))["steps"]
    # the reference's live shape (omnigent 0.19.1 reader.py _summary_is_child_trajectory, agy 1.1.9)
    assert summaries[child]["trajectoryMetadata"] == {
        "parentConversationId": sim.cascade_id,
        "rootConversationId": sim.cascade_id,
    }
    assert summaries[sim.cascade_id]["trajectoryMetadata"] == {"rootConversationId": sim.cascade_id}
    assert {s["trajectoryType"] for s in summaries.values()} == {"CORTEX_TRAJECTORY_TYPE_CASCADE"}
    assert meta == {"metadata": {"rootConversationId": sim.cascade_id}}
    assert next(short(s) for s in child_steps) == "USER_INPUT"
    assert all(info(s)["cascadeId"] == child for s in child_steps)
    assert summaries[child]["stepCount"] == len(child_steps) >= 3


async def test_clear_mints_a_new_cascade(sim: Simulator) -> None:
    await sim.submit_user_turn("hello")
    await sim.wait_idle()
    first = sim.cascade_id
    new = await sim.clear()
    assert sim.cascade_id == new != first
    async with client() as c:
        summaries = (await ok(c, sim, "GetAllCascadeTrajectories"))["trajectorySummaries"]
    assert summaries[new]["stepCount"] == 0 and "lastUserInputTime" not in summaries[new]
    assert summaries[first]["stepCount"] == 4 and summaries[first]["lastUserInputTime"]
    # a typed "/clear" does the same, and records nothing
    third = await sim.submit_user_turn("/clear")
    assert sim.cascade_id == third not in (first, new)
    assert sim.steps(new) == [] and sim.steps() == []
    await sim.submit_user_turn("hello")
    await sim.wait_idle()
    assert len(sim.steps(third)) == 4 and len(sim.steps(first)) == 4


async def test_clear_by_rpc_turn(sim: Simulator) -> None:
    first = sim.cascade_id
    async with client() as c:
        await ok(c, sim, "SendUserCascadeMessage", {"cascadeId": first, "items": [{"text": "/clear"}]})
        summaries = (await ok(c, sim, "GetAllCascadeTrajectories"))["trajectorySummaries"]
    assert sim.cascade_id != first and sim.cascade_id in summaries
    assert sim.steps(first) == []


async def test_subscribe_sees_every_change_and_unsubscribes(sim: Simulator) -> None:
    seen: list[tuple[str, str, str]] = []
    unsubscribe = sim.subscribe(lambda cid, step: seen.append((cid, short(step), step["status"])))
    await sim.submit_user_turn("hello")
    await sim.wait_idle()
    unsubscribe()
    assert {cid for cid, _, _ in seen} == {sim.cascade_id}
    planner = [status for _, kind, status in seen if kind == "PLANNER_RESPONSE"]
    assert planner[0] == "CORTEX_STEP_STATUS_GENERATING" and planner[-1] == "CORTEX_STEP_STATUS_DONE"
    assert len(planner) > 3
    n = len(seen)
    await sim.submit_user_turn("hello")
    await sim.wait_idle()
    assert len(seen) == n


async def test_turns_queue_while_one_runs(sim: Simulator) -> None:
    await sim.submit_user_turn("hello")
    await sim.submit_user_turn("hello again")
    await sim.wait_idle()
    kinds = [short(s) for s in sim.steps()]
    assert kinds.count("USER_INPUT") == 2
    assert kinds.index("USER_INPUT", 1) > kinds.index("CHECKPOINT")  # the second waited for the first
