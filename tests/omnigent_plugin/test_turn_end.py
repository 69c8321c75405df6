"""A turn is reported complete when agy's turn ended, not when the message was delivered (omnigent's
own agy harness has it otherwise: omnigent-ai/omnigent#6338).

omnigent's real terminal chat in tmux (``omnigent run <the README's agent> --server URL``) on the
real server, a slow simulated agy behind it, and a turn of several steps (two tool calls, then the
reply). What the user sees: the chat's status line says the turn is over only once agy is idle, the
session stores agy's whole reply and the chat shows it. The old way -- complete as
soon as agy took the message -- shows the prompt while agy is still writing.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

if shutil.which("tmux") is None:  # (in CI a skip fails the run: tests/ci_skips.py)
    pytest.skip("the tmux binary is not on PATH (.ci/run installs it)", allow_module_level=True)

from .chat import WAIT, open_chat

TURN = "list the directory and autorun `git status`"


async def test_the_chat_says_the_turn_is_over_only_once_agys_turn_ended(
    plugin_python: Path, plugin_server: str, plugin_host: Path, tmp_path: Path
) -> None:
    async with open_chat(plugin_python, tmp_path, pace=0.3, server=plugin_server, home=plugin_host) as chat:
        sim = chat.sim
        mark = await chat.turn(TURN)
        loop = asyncio.get_running_loop()
        end = loop.time() + WAIT
        while chat.sleeping():  # the chat has taken the line as a turn
            assert loop.time() < end, "the chat never started the turn"
            await asyncio.sleep(0.05)
        delivered_while_running = 0  # polls where agy had the message and worked on it, the turn still on
        while True:
            agy_busy = sim.is_running()
            delivered = any(s["type"].endswith("USER_INPUT") for s in sim.steps())
            if chat.sleeping():
                break
            if delivered and agy_busy:
                delivered_while_running += 1
            assert loop.time() < end, "the chat's turn never ended:\n" + "\n".join(chat.status())
            await asyncio.sleep(0.05)
        # the moment the chat said "over": agy had ended its turn, every step of it done
        assert not sim.is_running()
        steps = sim.steps()
        assert all(not s["status"].endswith(("RUNNING", "PENDING", "WAITING")) for s in steps), [
            (s["type"], s["status"]) for s in steps
        ]
        assert delivered_while_running > 5  # the message was delivered long before the turn ended
        # ... and the whole reply is stored in the session and shown (omnigent's chat can draw its
        # status line a moment before the last lines of the reply)
        planner = [s for s in steps if s["type"].endswith("PLANNER_RESPONSE")]
        reply = planner[-1]["plannerResponse"]["response"]
        assert reply.startswith("The workspace has") and "git status` ran (exit code 0)" in reply
        async with asyncio.timeout(5):
            while words(reply)[-60:] not in words(chat.screen()[len(mark) - 200 :]):
                await asyncio.sleep(0.1)
        ran = [s for s in steps if s["type"].endswith(("LIST_DIRECTORY", "RUN_COMMAND"))]
        assert [s["status"] for s in ran] == ["CORTEX_STEP_STATUS_DONE"] * 2
        session = (await chat.http.get(f"/v1/sessions/{chat.session_id}")).json()
        stored = [
            i["data"]["content"][0]["text"]
            for i in session["items"]
            if i["type"] == "message" and i["data"]["role"] == "assistant"
        ]
        assert stored and words(stored[-1]).endswith(words(reply))


def words(text: str) -> str:
    return " ".join(text.split())
