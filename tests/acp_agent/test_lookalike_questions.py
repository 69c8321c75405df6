"""Look-alike text in a question, through the ACP agent and the SDK's client (a neighbour of issue
#35 case 2): a question's options ``github.com`` / ``gіthub.com`` (a Cyrillic "і", U+0456) and
``Keep`` / ``Keep`` + a zero-width space were sent to the editor as agy wrote them -- the zero-width
space raw, the two hosts the same to the eye. Now every option's name and the question's title go
through the one rendering rule with their look-alikes flagged (core.display.flagged): the editor
shows four different texts, and a pick reaches the option picked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import rewrite_question

from .helpers import PermissionPolicy, RecordingClient, acp_agent

OPTIONS = [
    {"id": "1", "text": "github.com"},
    {"id": "2", "text": "g\u0456thub.com"},
    {"id": "3", "text": "Keep"},
    {"id": "4", "text": "Keep\u200b"},
]


@asynccontextmanager
async def in_editor(
    turn: str, change: Callable[[Simulator, int], object], permission: PermissionPolicy
) -> AsyncIterator[tuple[Simulator, int, RecordingClient]]:
    """agy's ``turn`` waits on a gate (its step ``index``), which ``change(agy, index)`` rewrites as a
    hostile model would; then the editor (the SDK's client, answering by ``permission``) loads the
    conversation: ``(agy, index, client)``."""
    async with Simulator(pace=0, gate_timeout=None) as agy:
        await agy.submit_user_turn(turn)
        async with asyncio.timeout(30):
            while not any(s["status"].endswith("WAITING") for s in agy.steps()):
                await asyncio.sleep(0.05)
        index = next(i for i, s in enumerate(agy.steps()) if s["status"].endswith("WAITING"))
        change(agy, index)
        client = RecordingClient(permission=permission)
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            await conn.load_session(cwd=agy.workspace, session_id=agy.cascade_id, mcp_servers=[])
            yield agy, index, client


async def test_look_alike_options_and_question_are_flagged_and_a_pick_reaches_its_option() -> None:
    picked: list[Any] = []

    async def pick_second(tool_call: Any, options: list[Any]) -> str:
        picked.append((tool_call.title, [o.name for o in options]))
        return str(options[1].option_id)

    def rewrite(agy: Simulator, index: int) -> None:
        rewrite_question(agy, index, OPTIONS)

    async with in_editor("ask: clone from g\u0456thub.com?", rewrite, pick_second) as (agy, index, client):
        await client.wait_for(lambda: bool(picked))
        async with asyncio.timeout(30):
            while agy.steps()[index]["status"].endswith("WAITING"):
                await asyncio.sleep(0.05)
    title, names = picked[0]
    assert "U+0456" in title  # the question's look-alike, named in its title
    github, lookalike, keep, keep_zw = names[:4]
    assert github == "github.com" and keep == "Keep"  # plain ASCII: no flags
    assert lookalike.startswith("g\u0456thub.com") and "U+0456" in lookalike and "mixed scripts" in lookalike
    assert keep_zw == "Keep\\u200b" and "\u200b" not in keep_zw  # the invisible character made visible
    assert len(set(names)) == len(names)
    assert agy.steps()[index]["askQuestion"]["questions"][0]["selectedOptionIds"] == ["2"]


async def test_a_look_alike_url_of_a_permission_is_flagged_in_its_body() -> None:
    """A permission to read ``https://gіthub.com/...`` (Cyrillic U+0456), no command: its body named
    nothing but the description (the terminal and the board flagged the URL, ACP did not). Now the
    URL's look-alike notes are in the body (core.display.path_notes), as a cwd's are."""
    from agy_harness.adapters.simulator.hostile import as_url_permission

    asked: list[Any] = []

    async def record(tool_call: Any, options: list[Any]) -> None:
        asked.append(tool_call)
        return None  # no answer: the request is cancelled (fails closed)

    def to_url(agy: Simulator, index: int) -> None:
        as_url_permission(agy, index, "https://g\u0456thub.com/org/repo")

    async with in_editor("run `ls`", to_url, record) as (_, _, client):
        await client.wait_for(lambda: bool(asked))
    body = [c.content.text for c in asked[0].content or [] if c.type == "content"]
    assert any("U+0456" in t for t in body) and any("mixed scripts" in t for t in body)
    assert "U+0456" in asked[0].title
