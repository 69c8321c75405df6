"""omnigent's own terminal chat, driven as a person would: ``omnigent run <docs/omnigent.md's agent> --server
URL`` (no ``-p``) in a tmux pane, keys typed with send-keys, the screen read with capture-pane. omnigent's
server, host daemon, runner, harness process and chat are all omnigent 0.19.1's own; agy is the
simulator. What is asserted is what the user sees (the chat's screen, the session's pending cards) and
what reached agy.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING

if shutil.which("tmux") is None:  # (in CI a skip fails the run: tests/ci_skips.py)
    pytest.skip("the tmux binary is not on PATH (.ci/run installs it)", allow_module_level=True)

from .chat import CARD, SERVER_POLL, WAIT, Chat, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chat(
    plugin_python: Path,
    plugin_server: str,
    plugin_host: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Chat]:
    async with open_chat(
        plugin_python, tmp_path_factory.mktemp("chat"), server=plugin_server, home=plugin_host
    ) as opened:
        yield opened


def question_steps(sim: Simulator) -> list[dict[str, Any]]:
    return [s["askQuestion"]["questions"][0] for s in sim.steps() if s["type"].endswith("ASK_QUESTION")]


async def test_a_question_answered_with_an_option_in_the_chat_reaches_agy(chat: Chat) -> None:
    mark = await chat.turn("ask: which part should we work on first?")
    card = (await chat.wait(CARD, since=mark))[len(mark) - 2000 :]
    assert "1 = (Recommended) Start with the core logic." in card and "2 = Start with the tests." in card
    chat.type("y")
    await chat.wait("type an option's number", since=mark)
    chat.type("2")
    await chat.wait("You chose: Start with the tests.", since=mark)
    await chat.idle()
    assert question_steps(chat.sim)[-1]["selectedOptionIds"] == ["2"]
    assert await chat.pending() == []


async def test_a_multi_select_question_takes_several_numbers(chat: Chat) -> None:
    mark = await chat.turn("ask multiple: which parts should we test?")
    await chat.wait(CARD, since=mark)
    chat.type("y")
    await chat.wait("comma-separated", since=mark)
    chat.type("1, 3")
    await chat.wait("You chose: ", since=mark)  # (the status line can say "sleeping" a moment before)
    await chat.idle()
    assert question_steps(chat.sim)[-1]["selectedOptionIds"] == ["1", "3"]


async def test_a_written_answer_reaches_agy_as_the_write_in(chat: Chat) -> None:
    mark = await chat.turn("ask: which database should we use?")
    await chat.wait(CARD, since=mark)
    chat.type("y")
    await chat.wait("your own answer", since=mark)
    chat.type("PostgreSQL 16, please")
    await chat.wait("You chose: PostgreSQL 16, please.", since=mark)
    assert question_steps(chat.sim)[-1]["writeInResponse"] == "PostgreSQL 16, please"


async def test_a_command_approved_in_the_chat_runs(chat: Chat) -> None:
    mark = await chat.turn("run: git status")
    await chat.wait(CARD, since=mark)
    assert [c["params"].get("command") for c in await chat.pending()] == ["git status"]
    chat.type("y")
    await chat.wait("git status ran (exit code 0)", since=mark)
    await chat.idle()
    assert await chat.pending() == []


async def test_a_command_answered_in_agys_terminal_leaves_no_card(chat: Chat) -> None:
    mark = await chat.turn("run: git log -n 1")
    await chat.wait(CARD, since=mark)
    assert [c["params"].get("command") for c in await chat.pending()] == ["git log -n 1"]
    await chat.sim.resolve_in_terminal(kind="permission")
    # the sidebar, the cold-load replay: the card goes (a condition; a bound a loaded machine keeps,
    # not the one second it takes on an idle one)
    async with asyncio.timeout(WAIT):
        while await chat.pending():
            await asyncio.sleep(SERVER_POLL)
    await chat.wait("git log -n 1 ran (exit code 0)", since=mark)
    await chat.idle()
    # the chat takes the next line as a turn again: no prompt was left waiting for it
    mark = await chat.turn("Say hello in one short sentence.")
    await chat.wait(GREETING, since=mark)
    await chat.idle()


@pytest.mark.parametrize(
    ("key", "sent"),
    [("y", {"cancel": False, "deployTarget": {"name": "my-site"}}), ("n", {"cancel": True})],
    ids=["deploy", "cancel"],
)
async def test_a_deploy_answered_in_the_chat_reaches_agy_in_its_shape(
    chat: Chat, key: str, sent: dict[str, Any]
) -> None:
    """issue 45: the chat's legend names the kind's own answers; ``n`` cancels the deploy with
    ``cancel: true`` (an empty deploy would proceed), ``y`` deploys the one target shown."""
    mark = await chat.turn("kind: deploy my-site")
    screen = " ".join((await chat.wait(CARD, since=mark)).split())
    assert "y = Deploy, n = Cancel the deploy" in screen
    before = len(chat.sim.received)
    chat.type(key)
    async with asyncio.timeout(WAIT):
        while len(chat.sim.received) == before:
            await asyncio.sleep(0.05)
    [(_, interaction)] = chat.sim.received[before:]
    assert interaction["deploy"] == sent
    await chat.idle()
