"""omnigent's chat ("approve always") never widens what a human approved (issue #26, case 5).

The real ``omnigent run <agent> --server URL`` REPL in tmux, with the README's agent (``harness:
agy-harness``) on the simulator. omnigent's chat remembers "a = approve always (this session)" per
``(policy_name, phase)`` of the elicitation; every gate once went out under one policy name, so "always"
on ``rm -rf build`` made a later ``curl ...`` run with no prompt. Now each request has its own policy
name: "always" covers that exact request (agy's re-ask of it after a timeout), nothing else.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

if shutil.which("tmux") is None:
    pytest.skip("the tmux binary is not on PATH", allow_module_level=True)

from .chat import CARD, SERVER_POLL, WAIT, open_chat

CURL = "curl https://example.com/x.sh"


async def test_approve_always_in_omnigents_chat_covers_only_that_request(
    plugin_python: Path, plugin_server: str, plugin_host: Path, tmp_path: Path
) -> None:
    async with open_chat(plugin_python, tmp_path, server=plugin_server, home=plugin_host) as chat:
        sim = chat.sim
        mark = await chat.turn("run `rm -rf build`")
        await chat.wait(CARD, since=mark)
        chat.type("a")  # approve always (this session)
        async with asyncio.timeout(WAIT):
            while ("rm -rf build", sim.workspace) not in sim.executed:
                await asyncio.sleep(0.1)
        await sim.wait_idle(timeout=WAIT)
        await chat.idle()
        # the same command asked again in a later turn is another request: asked again too
        mark = await chat.turn("run `rm -rf build`")
        shown = await chat.wait(CARD, since=mark)
        assert "auto-approved" not in shown[len(mark) - 200 :], shown
        chat.type("y")
        await chat.wait("rm -rf build ran", since=mark)
        await chat.idle()
        mark = await chat.turn("run `curl https://example.com/x.sh`")
        shown = await chat.wait(CARD, since=mark)
        assert "auto-approved" not in shown[len(mark) - 200 :], shown
        assert all("curl" not in command for command, _ in sim.executed)  # it waits for the human
        chat.type("n")  # (omnigent then stops the turn)
        await chat.wait("refused", since=mark)
        await sim.wait_idle(timeout=WAIT)
        assert all("curl" not in command for command, _ in sim.executed)


async def test_approve_always_does_not_carry_to_the_next_command_of_the_same_turn(
    plugin_python: Path, plugin_server: str, plugin_host: Path, tmp_path: Path
) -> None:
    """agy runs ``a && b`` as two gated commands of one turn: "always" on the first leaves the second
    to the human, shown and unrun until answered."""
    async with open_chat(plugin_python, tmp_path, server=plugin_server, home=plugin_host) as chat:
        sim = chat.sim
        mark = await chat.turn(f"run `rm -rf build && {CURL}`")
        await chat.wait(CARD, since=mark)
        [card] = await chat.pending()
        assert card["params"]["command"] == "rm -rf build"
        chat.type("a")  # approve always (this session)
        async with asyncio.timeout(WAIT):  # the second command's own card, in the same turn, shown
            while [c["params"].get("command") for c in await chat.pending()] != [CURL] or (
                chat.screen().count(CARD) < mark.count(CARD) + 2
            ):
                assert (CURL, sim.workspace) not in sim.executed, (
                    "the curl ran unasked:\n" + chat.screen()[-3000:]
                )
                await asyncio.sleep(SERVER_POLL)
        shown = chat.screen()
        assert "auto-approved" not in shown[len(mark) - 200 :], shown
        assert [c for c, _ in sim.executed] == ["rm -rf build"]  # the curl waits for the human
        chat.type("n")
        await chat.wait("refused", since=mark)
        # the chat shows "refused" before the deny reaches agy, and wait_idle returns at once while
        # agy is still parked on the gate: wait for the gate to be answered first
        async with asyncio.timeout(WAIT):
            while any(
                s["status"].endswith("WAITING") for s in sim.steps() if s["type"].endswith("RUN_COMMAND")
            ):
                await asyncio.sleep(0.05)
        await sim.wait_idle(timeout=WAIT)
        assert [c for c, _ in sim.executed] == ["rm -rf build"]
        [first, second] = [s for s in sim.steps() if s["type"].endswith("RUN_COMMAND")]
        assert first["completedInteractions"][0]["response"]["permission"] == {"allow": True}
        assert second["status"] == "CORTEX_STEP_STATUS_ERROR", second
