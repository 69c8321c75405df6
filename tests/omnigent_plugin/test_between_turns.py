"""Through the plugin, on omnigent's real server with its real terminal chat in tmux (``chat.py``): what
agy does between omnigent's turns (a turn typed in agy's own terminal) is in the session, and its gates
are answerable in omnigent at once -- in the chat and on the web UI's resolve route -- under the same
per-request scope as a turn's gates. Also the web resolve route answering a gate of an omnigent turn.
What is asserted is what the user sees (the chat's screen, the session's pending cards and child
sessions) and what reached agy.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

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
        plugin_python, tmp_path_factory.mktemp("between"), server=plugin_server, home=plugin_host
    ) as opened:
        mark = await opened.turn("Say hello in one short sentence.")  # omnigent starts the harness
        await opened.wait(GREETING, since=mark)
        await opened.idle()
        yield opened


async def typed_in_agy(chat: Chat, text: str) -> str:
    """A turn typed in agy's own terminal (no omnigent turn runs); the chat's screen before it."""
    before = chat.screen()
    await chat.sim.submit_user_turn(text)
    return before


async def ran(chat: Chat, command: str) -> None:
    async with asyncio.timeout(WAIT):
        while not any(c == command for c, _ in chat.sim.executed):
            await asyncio.sleep(0.05)


def question_steps(chat: Chat) -> list[dict[str, Any]]:
    return [s["askQuestion"]["questions"][0] for s in chat.sim.steps() if s["type"].endswith("ASK_QUESTION")]


async def test_a_gate_raised_between_turns_is_answered_in_the_chat_at_once(chat: Chat) -> None:
    mark = await typed_in_agy(chat, "run: git status")
    await chat.wait(CARD, since=mark)  # no omnigent turn runs: the card is up anyway
    card = await chat.card()
    assert card["params"]["command"] == "git status"
    assert not [c for c, _ in chat.sim.executed if c == "git status"]
    chat.type("y")
    await ran(chat, "git status")
    await chat.no_card()
    await chat.sim.wait_idle(timeout=WAIT)
    items = (await chat.http.get(f"/v1/sessions/{chat.session_id}")).json()["items"]
    said = [i["data"]["content"][0]["text"] for i in items if i["type"] == "message"]
    assert "run: git status" in said  # the turn typed in agy is in the session too


async def test_a_question_raised_between_turns_is_answered_on_the_web_route(chat: Chat) -> None:
    mark = await typed_in_agy(chat, "ask: which part should we work on first?")
    await chat.wait(CARD, since=mark)
    card = await chat.card()
    assert await chat.resolve(card, {"action": "accept", "content": {"0": "Start with the tests."}}) == 202
    async with asyncio.timeout(WAIT):
        while question_steps(chat)[-1].get("selectedOptionIds") != ["2"]:
            await asyncio.sleep(0.05)
    await chat.no_card()
    # omnigent 0.19.1's chat takes "resolved via approval page" as its own y and asks for the form
    # (the README's limit): what is typed there reaches nobody
    await chat.wait("resolved via approval page", since=mark)
    await chat.wait("type an option's number", since=mark)
    chat.type("3")
    await chat.sim.wait_idle(timeout=WAIT)
    await asyncio.sleep(1.0)
    [asked] = [s for s in chat.sim.steps() if s["type"].endswith("ASK_QUESTION")][-1:]
    assert len(asked["completedInteractions"]) == 1
    assert question_steps(chat)[-1]["selectedOptionIds"] == ["2"]
    await chat.no_card()


async def test_always_in_a_turn_does_not_approve_another_command_typed_in_agy(chat: Chat) -> None:
    mark = await chat.turn("run `rm -rf build`")
    await chat.wait(CARD, since=mark)
    chat.type("a")  # approve always (this session): this request
    await ran(chat, "rm -rf build")
    await chat.idle()
    mark = await typed_in_agy(chat, "run `curl https://example.com/x.sh`")
    shown = await chat.wait(CARD, since=mark)
    assert "auto-approved" not in shown[len(mark) - 200 :]
    assert not [c for c, _ in chat.sim.executed if c.startswith("curl")]  # it waits for the human
    chat.type("n")
    await chat.sim.wait_idle(timeout=WAIT)
    await chat.no_card()
    assert not [c for c, _ in chat.sim.executed if c.startswith("curl")]
    # omnigent interrupts the harness on a refusal: with no omnigent turn running that stops nothing
    mark = await chat.turn("Say hello in one short sentence.")
    await chat.wait(GREETING, since=mark)
    await chat.idle()


async def test_a_card_only_agys_terminal_answers_is_up_between_turns_until_agy_moves_on(chat: Chat) -> None:
    await typed_in_agy(chat, "write the file notes.txt")
    card = await chat.card()
    assert card["params"]["phase"] == "agy_terminal_only"
    await chat.sim.resolve_in_terminal()  # answered in agy's own terminal
    await chat.no_card()
    await chat.sim.wait_idle(timeout=WAIT)
    await chat.wait("resolved via approval page")  # the chat's own prompt for it is gone too
    await chat.idle()


async def test_a_sub_agent_of_a_turn_typed_in_agy_is_in_its_child_session(chat: Chat) -> None:
    await typed_in_agy(chat, "start a subagent to review the code")
    async with asyncio.timeout(WAIT):
        while not chat.sim.children():
            await asyncio.sleep(0.05)
    [kid] = chat.sim.children()
    async with asyncio.timeout(WAIT):  # its row ends as finished, as the web UI's rail shows it
        while True:
            rows = (await chat.http.get(f"/v1/sessions/{chat.session_id}/child_sessions")).json()["data"]
            if rows and rows[0]["current_task_status"] == "completed":
                break
            await asyncio.sleep(SERVER_POLL)
    [child] = rows
    assert child["title"] == f"Code Reviewer:{kid}" and child["busy"] is False
    items = (await chat.http.get(f"/v1/sessions/{child['id']}")).json()["items"]
    replies = [i for i in items if i["type"] == "message" and i["data"]["role"] == "assistant"]
    assert replies[-1]["data"]["content"][0]["text"] == GREETING  # the child says hello first
    # the chat's ↓ agents menu shows it done; its status line counts a finished sub-agent running for
    # 3 s more (omnigent 0.19.1's chat: _SUBAGENT_LINGER_SECONDS) and redraws on input
    chat.tmux.cmd("send-keys", "-t", chat.pane_id, "Down")
    await chat.wait(f"Code Reviewer:{kid}  · Done")
    await asyncio.sleep(3.5)
    chat.tmux.cmd("send-keys", "-t", chat.pane_id, "Escape")
    await chat.idle()


async def test_the_web_route_answers_a_gate_of_an_omnigent_turn(chat: Chat) -> None:
    mark = await chat.turn("run: git diff")
    await chat.wait(CARD, since=mark)
    card = await chat.card()
    assert card["params"]["command"] == "git diff"
    assert await chat.resolve(card, {"action": "accept"}) == 202
    await ran(chat, "git diff")
    await chat.no_card()
    await chat.wait("resolved via approval page", since=mark)
    await chat.wait("git diff ran (exit code 0)", since=mark)
    await chat.idle()


async def test_agys_clear_is_a_boundary_and_the_next_omnigent_turn_goes_to_the_new_conversation(
    chat: Chat,
) -> None:
    """The README: agy's ``/clear`` between omnigent's turns (and a turn typed after it: the rotation
    rule follows a new conversation only on fresh user input) is a visible boundary in the session,
    followed by the new conversation's items; the next omnigent turn goes to the new agy conversation."""
    old = chat.sim.cascade_id
    new = await chat.sim.submit_user_turn("/clear")  # typed in agy's own terminal
    await chat.sim.submit_user_turn("hello after the clear")
    assert new != old

    def cleared(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [i for i in items if i["data"].get("code") == "agy_conversation_cleared"]

    async with asyncio.timeout(WAIT):
        while not cleared(items := await session_items(chat)) or items[-1]["data"].get("role") != "assistant":
            await asyncio.sleep(SERVER_POLL)
    [boundary] = cleared(items)
    assert boundary["type"] == "error" and boundary["data"]["level"] == "info"
    assert new in boundary["data"]["message"]
    after = [(i["data"]["role"], i["data"]["content"][0]["text"]) for i in items[items.index(boundary) + 1 :]]
    assert after == [("user", "hello after the clear"), ("assistant", GREETING)]
    old_turns = len([s for s in chat.sim.steps(old) if s["type"].endswith("USER_INPUT")])
    mark = await chat.turn("Say hello in one short sentence.")
    await chat.wait(GREETING, since=mark)
    await chat.idle()
    texts = [
        s["userInput"]["items"][0]["text"] for s in chat.sim.steps(new) if s["type"].endswith("USER_INPUT")
    ]
    assert texts == ["hello after the clear", "Say hello in one short sentence."]
    assert len([s for s in chat.sim.steps(old) if s["type"].endswith("USER_INPUT")]) == old_turns


async def session_items(chat: Chat) -> list[dict[str, Any]]:
    session = (await chat.http.get(f"/v1/sessions/{chat.session_id}")).json()
    return list(session["items"])
