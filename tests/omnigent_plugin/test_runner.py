"""The plugin in omnigent's environment, driven through omnigent's own harness runner entry point
(``omnigent.runtime.harnesses._runner``: forked by omnigent's runner zygote, ``plugin_zygote``, one
test's exec'd) against the simulator: what omnigent streams and what reaches agy."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING, LONG_TEXT

from .runner import RunnerProcess
from .zygote import Zygote

STEP = "CORTEX_STEP_TYPE_"


def steps_of(sim: Simulator, kind: str) -> list[dict[str, Any]]:
    return [s for s in sim.steps() if s.get("type") == STEP + kind]


def steps_of_cascade(sim: Simulator, cascade: str, kind: str) -> list[dict[str, Any]]:
    return [s for s in sim.steps(cascade) if s.get("type") == STEP + kind]


def user_models(sim: Simulator) -> list[str]:
    return [
        s["userInput"]["userConfig"]["plannerConfig"].get("planModel", "")
        for s in steps_of(sim, "USER_INPUT")
    ]


@pytest.fixture
async def agy() -> AsyncIterator[Simulator]:
    async with Simulator(profile="1.0.10", pace=0.05, gate_timeout=None) as sim:
        yield sim


def runner_for(zygote: Zygote, sim: Simulator, tmp_path: Path, **env: str) -> RunnerProcess:
    """The harness process, forked by omnigent's runner zygote as a host's runner has it forked
    (``zygote.py``), bound to ``sim``; ``env``: more of the plugin's settings."""
    settings = {"HARNESS_AGY_HARNESS_PORT": str(sim.port), "HARNESS_AGY_HARNESS_CASCADE": sim.cascade_id}
    settings.update({f"HARNESS_AGY_HARNESS_{k.upper()}": v for k, v in env.items()})
    return RunnerProcess(zygote.python, settings, tmp_path, zygote=zygote)


async def test_text_turn_streams_with_usage_and_model(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("Say hello in one short sentence.")
        terminal = await turn.finished()
    assert terminal["type"] == "response.completed"
    deltas = turn.of_type("response.output_text.delta")
    assert len(deltas) > 1  # streamed, not one blob
    assert turn.text == GREETING
    assert turn.of_type("response.reasoning_text.delta")
    # usage with omnigent's semantics: input counts cache reads; the model by its catalog name
    [planner] = [s for s in steps_of(agy, "PLANNER_RESPONSE")]
    spent = planner["metadata"]["modelUsage"]
    usage = terminal["response"]["usage"]
    cache = int(spent.get("cacheReadTokens", 0))
    assert usage["input_tokens"] == int(spent["inputTokens"]) + cache
    assert usage["cache_read_input_tokens"] == cache
    assert usage["output_tokens"] == int(spent["outputTokens"])
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert usage["model"] == "Gemini 3 Pro"


async def test_allowed_command_runs_and_denied_does_not(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("run: pwd")
        ask = await turn.wait_for("response.elicitation_request")
        assert ask["params"]["command"] == "pwd"
        assert "/" not in ask["elicitation_id"]
        assert await runner.approve(ask["elicitation_id"], "accept") == 204
        assert (await turn.finished())["type"] == "response.completed"
        outputs = [
            e["item"]
            for e in turn.of_type("response.output_item.done")
            if e["item"]["type"] == "function_call_output"
        ]
        assert outputs and agy.workspace in outputs[0]["output"]

        turn = await runner.message("run: rm -rf build")
        ask = await turn.wait_for("response.elicitation_request")
        assert ask["params"]["command"] == "rm -rf build"
        assert await runner.approve(ask["elicitation_id"], "decline") == 204
        assert (await turn.finished())["type"] == "response.completed"
        assert "did not run" in turn.text
    allowed, denied = steps_of(agy, "RUN_COMMAND")
    assert allowed["status"].endswith("DONE")
    assert allowed["completedInteractions"][0]["response"]["permission"] == {"allow": True}
    assert denied["status"].endswith("ERROR")
    assert denied["completedInteractions"][0]["response"]["permission"] == {}  # agy's deny
    assert "runCommand" not in denied or not denied["runCommand"].get("combinedOutput")


async def test_question_answer_reaches_agy_and_unreadable_is_asked_again(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("ask: which part should we work on first?")
        ask = await turn.wait_for("response.elicitation_request")
        [question] = ask["params"]["ask_user_question"]["questions"]
        labels = [o["label"] for o in question["options"]]
        # a number that is no option: refused, nothing reaches agy, asked again with the reason
        assert await runner.approve(ask["elicitation_id"], "accept", {"0": "7"}) == 204
        again = await turn.wait_for("response.elicitation_request", 2)
        assert again["elicitation_id"] != ask["elicitation_id"]
        assert "could not be read" in again["params"]["message"]
        # its own policy name: a chat that was told "always" for the card shows the re-ask, reason and all
        assert again["params"]["policy_name"] != ask["params"]["policy_name"]
        [waiting] = steps_of(agy, "ASK_QUESTION")
        assert waiting["status"].endswith("WAITING") and "completedInteractions" not in waiting
        assert await runner.approve(again["elicitation_id"], "accept", {"0": labels[1]}) == 204
        assert (await turn.finished())["type"] == "response.completed"

        turn = await runner.message("ask: choose several areas to review?  multiple")
        ask = await turn.wait_for("response.elicitation_request")
        [question] = ask["params"]["ask_user_question"]["questions"]
        assert question["multiSelect"] is True
        picks = [question["options"][0]["label"], question["options"][2]["label"], "the build scripts"]
        assert await runner.approve(ask["elicitation_id"], "accept", {"0": picks}) == 204
        assert (await turn.finished())["type"] == "response.completed"
    first, multi = steps_of(agy, "ASK_QUESTION")
    [answer] = first["completedInteractions"][0]["response"]["askQuestion"]["responses"]
    assert answer["selectedOptionIds"] == ["2"]
    [answer] = multi["completedInteractions"][0]["response"]["askQuestion"]["responses"]
    assert answer["selectedOptionIds"] == ["1", "3"]
    assert answer["writeInResponse"] == "the build scripts"


async def test_stop_interrupts_agy(plugin_zygote: Zygote, tmp_path: Path) -> None:
    async with (
        Simulator(profile="1.0.10", pace=1.0) as slow,
        runner_for(plugin_zygote, slow, tmp_path) as runner,
    ):
        turn = await runner.message("Write a long story about a lighthouse keeper.")
        await turn.wait_for("response.output_text.delta")
        assert slow.is_running()
        assert await runner.interrupt() == 204
        terminal = await turn.finished()
        assert terminal["type"] == "response.cancelled"
        # the cancel reached agy (not only omnigent): agy stopped mid-story
        await slow.wait_idle(timeout=5)
        assert "CancelCascadeSteps" in slow.calls
        replies = [s["plannerResponse"].get("response", "") for s in steps_of(slow, "PLANNER_RESPONSE")]
        assert len(replies[-1]) < len(LONG_TEXT)


async def test_stop_at_a_parked_gate_denies_it(plugin_zygote: Zygote, agy: Simulator, tmp_path: Path) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("run: make deploy")
        await turn.wait_for("response.elicitation_request")
        assert await runner.interrupt() == 204
        assert (await turn.finished())["type"] == "response.cancelled"
        await agy.wait_idle(timeout=5)
        [command] = steps_of(agy, "RUN_COMMAND")
        assert command["status"].endswith("ERROR")
        assert command["completedInteractions"][0]["response"]["permission"] == {}
        # the conversation goes on
        turn = await runner.message("Say hello in one short sentence.")
        assert (await turn.finished())["type"] == "response.completed"
        assert turn.text == GREETING


async def test_model_setting_resolved_against_agys_catalog(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path, model="gemini 3 flash") as runner:
        turn = await runner.message("Say hello in one short sentence.")
        terminal = await turn.finished()
        assert terminal["response"]["usage"]["model"] == "Gemini 3 Flash"
        assert user_models(agy) == ["MODEL_PLACEHOLDER_M71"]
        # omnigent's per-turn override (an agy id works too)
        turn = await runner.message("Say hello again.", model_override="MODEL_PLACEHOLDER_M50")
        await turn.finished()
        assert user_models(agy)[-1] == "MODEL_PLACEHOLDER_M50"
        # a model agy does not have: a clear failure, and nothing is sent to agy
        turn = await runner.message("Say hello.", model_override="gpt-5")
        terminal = await turn.finished()
        assert terminal["type"] == "response.failed"
        assert "Gemini 3 Pro" in terminal["response"]["error"]["message"]
        assert len(user_models(agy)) == 2


async def test_steering_is_a_queued_turn(plugin_zygote: Zygote, tmp_path: Path) -> None:
    async with (
        Simulator(profile="1.0.10", pace=0.5) as sim,
        runner_for(plugin_zygote, sim, tmp_path) as runner,
    ):
        turn = await runner.message("Write a long story about a lighthouse keeper.")
        await turn.wait_for("response.output_text.delta")
        steer = await runner.post(
            {
                "type": "message",
                "role": "user",
                "content": "Say hello in one short sentence.",
                "model": "agy-agent",
            }
        )
        assert steer.status_code == 204  # omnigent injected it into the running turn
        terminal = await turn.finished(timeout=120)
        assert terminal["type"] == "response.completed"
        texts = [s["userInput"]["items"][0]["text"] for s in steps_of(sim, "USER_INPUT")]
        assert texts == ["Write a long story about a lighthouse keeper.", "Say hello in one short sentence."]
        assert turn.text.endswith(GREETING)  # the omnigent turn lasted until agy answered the steer


async def test_subagent_is_announced(plugin_zygote: Zygote, agy: Simulator, tmp_path: Path) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("start a subagent to review the code")
        terminal = await turn.finished()
        assert terminal["type"] == "response.completed"
        started = turn.of_type("subagent.started")
        assert [e["child_key"] for e in started] == agy.children()
        assert started[0]["title"] == "Code Reviewer (research)"  # the role and type agy's step gives it
        [done] = turn.of_type("subagent.completed")
        assert done["child_key"] == started[0]["child_key"] and done["ok"] is True
        child_reply = steps_of_cascade(agy, done["child_key"], "PLANNER_RESPONSE")[-1]
        assert done["summary"] == child_reply["plannerResponse"]["response"]


async def test_an_agy_error_fails_the_turn_and_the_session_goes_on(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("Say hello in one short sentence.")
        assert (await turn.finished())["type"] == "response.completed"
        agy.faults.fail("SendUserCascadeMessage", status=500, message="agy is overloaded")
        turn = await runner.message("Say hello again.")
        terminal = await turn.finished()
        assert terminal["type"] == "response.failed"
        error = terminal["response"]["error"]
        assert "agy did not take the turn" in error["message"] and "agy is overloaded" in error["message"]
        assert error.get("undelivered") is True  # omnigent keeps the user's message to send again
        assert len(steps_of(agy, "USER_INPUT")) == 1
        turn = await runner.message("Say hello in one short sentence.")
        assert (await turn.finished())["type"] == "response.completed"
        assert turn.text == GREETING
        assert len(steps_of(agy, "USER_INPUT")) == 2


async def test_a_gate_raised_outside_omnigent_waits_for_the_next_turn(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("Say hello in one short sentence.")
        assert (await turn.finished())["type"] == "response.completed"
        # typed in agy's terminal between omnigent's turns: its gate is not answered for anyone
        await agy.submit_user_turn("run: git status")
        async with asyncio.timeout(30):
            while not [s for s in steps_of(agy, "RUN_COMMAND") if s["status"].endswith("WAITING")]:
                await asyncio.sleep(0.05)
        # the next omnigent turn puts it to the human (had anything answered it meanwhile, no card
        # would come); once answered, agy runs it, then our turn
        turn = await runner.message("Say hello in one short sentence.")
        ask = await turn.wait_for("response.elicitation_request")
        assert ask["params"]["command"] == "git status"
        assert await runner.approve(ask["elicitation_id"], "accept") == 204
        assert (await turn.finished(timeout=60))["type"] == "response.completed"
        assert turn.text == GREETING
    [command] = steps_of(agy, "RUN_COMMAND")
    assert command["status"].endswith("DONE")
    assert command["completedInteractions"][0]["response"]["permission"] == {"allow": True}


async def test_a_gate_only_agys_terminal_can_answer_is_a_card_retired_when_agy_moves_on(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("write the file notes.txt")
        first = await turn.wait_for("response.elicitation_request")
        assert first["params"]["phase"] == "agy_terminal_only"
        assert "agy's terminal" in first["params"]["message"]
        # an answer given to it in omnigent is refused: nothing reaches agy, the card stays up, saying so
        assert await runner.approve(first["elicitation_id"], "accept") == 204
        card = await turn.wait_for("response.elicitation_request", 2)
        assert card["params"]["phase"] == "agy_terminal_only"
        assert card["params"]["message"].startswith(
            "Nothing was sent to agy: it waits for this in agy's terminal"
        )
        [review] = steps_of(agy, "WRITE_TO_FILE")
        assert review["status"].endswith("WAITING") and "completedInteractions" not in review
        await agy.resolve_in_terminal()  # the human answers in agy's own terminal
        assert (await turn.finished())["type"] == "response.completed"
    retired = [e["elicitation_id"] for e in turn.of_type("response.elicitation_resolved")]
    assert retired == [card["elicitation_id"]]
    assert [s["status"] for s in steps_of(agy, "WRITE_TO_FILE")] == ["CORTEX_STEP_STATUS_DONE"]


async def test_the_harness_log_names_the_version_of_the_agy_it_bound(
    plugin_python: Path, tmp_path: Path
) -> None:
    """It said "agy unknown version" for `agy-harness sim` (it asked `agy --version`, not the agy bound).
    Its harness process is exec'd (``python -P -m omnigent.runtime.harnesses._runner``), as a runner
    that was not forked by a zygote starts it: that way, and the plugin imported in a fresh Python, stay
    covered (the other tests here fork theirs from omnigent's zygote)."""
    import subprocess
    import sys

    sim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agy_harness.composition.cli",
            "sim",
            "--profile",
            "1.0.10",
            "--pace",
            "0.05",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sim.stdout is not None
        info = dict(sim.stdout.readline().strip().partition(" ")[::2] for _ in range(4))
        settings = {"port": info["port"], "cascade": info["cascade"]}
        async with RunnerProcess(
            plugin_python, {f"HARNESS_AGY_HARNESS_{k.upper()}": v for k, v in settings.items()}, tmp_path
        ) as runner:
            turn = await runner.message("Say hello in one short sentence.")
            await turn.finished()
    finally:
        sim.terminate()
        sim.wait(10)
    log = (tmp_path / "harness.log").read_text()
    assert "agy 1.0.10: streams its steps, takes turns over RPC" in log and "unknown" not in log


@pytest.mark.parametrize("kind", ["permission", "question"])
async def test_a_card_answered_in_agys_terminal_is_retired(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path, kind: str
) -> None:
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("run: git status" if kind == "permission" else "ask: which part first?")
        card = await turn.wait_for("response.elicitation_request")
        await agy.resolve_in_terminal(kind=kind)
        # before the turn ends (wait_for refuses a turn that ended without it), not within a wall-clock second
        retired = await turn.wait_for("response.elicitation_resolved")
        assert retired["elicitation_id"] == card["elicitation_id"]
        assert (await turn.finished())["type"] == "response.completed"


async def test_a_scope_picked_on_the_card_reaches_agy_through_omnigents_runner(
    plugin_zygote: Zygote, agy: Simulator, tmp_path: Path
) -> None:
    """issue 34 through the plugin: the card's choices are the gate's scopes; the web card's button
    ("for this conversation") reaches agy as that scope, and the next identical ``ls`` runs with no card."""
    async with runner_for(plugin_zygote, agy, tmp_path) as runner:
        turn = await runner.message("run: ls -la")
        ask = await turn.wait_for("response.elicitation_request")
        choices = ask["params"]["requestedSchema"]["properties"]["answer"]["enum"]
        assert choices == [
            "Allow once",
            "Allow for this conversation: commands that start with 'ls'",
            "Always allow: commands that start with 'ls'",
            "Deny",
        ]
        assert await runner.approve(ask["elicitation_id"], "accept", {"answer": choices[1]}) == 204
        assert (await turn.finished())["type"] == "response.completed"
        turn = await runner.message("run: ls src")
        assert (await turn.finished())["type"] == "response.completed"
        assert not turn.of_type("response.elicitation_request")  # agy kept the grant: no card
    first, second = steps_of(agy, "RUN_COMMAND")
    granted = {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"}
    assert first["completedInteractions"][0]["response"]["permission"] == granted
    assert "completedInteractions" not in second and second["status"].endswith("DONE")
    assert [c for c, _ in agy.executed] == ["ls -la", "ls src"]
