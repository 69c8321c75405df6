"""A flood of bogus gates through the ACP agent (issue #35, case 8), with the SDK's client: 20 WAITING
approvals agy refuses any answer to, then the editor's prompt for a real command. One human allows
every permission request, one at a time. The real request reaches them, each bogus one is asked once
(one that gave way to a newer gate before its answer may come back: a few), each says "set aside"
once, and its card ends "failed" (before the fix the 20 bogus cards stayed "in_progress" for good)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates

from .helpers import PermissionPolicy, RecordingClient, acp_agent, prompt

POISON = 20


@asynccontextmanager
async def loaded(permission: PermissionPolicy) -> AsyncIterator[tuple[Simulator, RecordingClient, Any, str]]:
    """agy (the simulator) past a first turn, and the editor (the SDK's client, answering permission
    requests by ``permission``) with that conversation loaded: ``(agy, client, conn, session id)``."""
    async with Simulator(pace=0, gate_timeout=None) as agy:
        await agy.submit_user_turn("say hello")
        await agy.wait_idle(timeout=30)
        client = RecordingClient(permission=permission)
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = agy.cascade_id
            await conn.load_session(cwd=agy.workspace, session_id=sid, mcp_servers=[])
            yield agy, client, conn, sid


async def test_a_flood_of_bogus_gates_is_set_aside_and_the_real_request_is_asked() -> None:
    turn = asyncio.Lock()  # one human, one request at a time
    asked: list[str] = []  # the title of every permission request, in order

    async def allow(tool_call: Any, options: list[Any]) -> str:
        async with turn:
            asked.append(tool_call.title)
            await asyncio.sleep(0)
            return "allow"

    async with loaded(allow) as (agy, client, conn, sid):
        flood_gates(agy, POISON)
        turn_done = asyncio.ensure_future(prompt(conn, sid, "run `touch real`"))

        def aside() -> list[Any]:
            return [u for u in client.of(sid, "agent_message_chunk") if "set aside" in u.content.text]

        def failed() -> set[str]:
            return {u.tool_call_id for u in client.of(sid, "tool_call_update") if u.status == "failed"}

        await client.wait_for(lambda: ("touch real", agy.workspace) in agy.executed, timeout=60)
        await client.wait_for(
            lambda: len(failed()) >= len(aside()) >= len({t for t in asked if "bogus" in t})
        )
        assert (await turn_done).stop_reason == "end_turn"
    bogus = [t for t in asked if "bogus-" in t]
    real = next(i for i, t in enumerate(asked) if "touch real" in t)
    assert len(bogus[:real]) <= POISON + 2  # each once before it (more of them than the asks shown at once)
    assert len(set(bogus)) <= len(bogus) <= len(set(bogus)) + 2, Counter(bogus)
    told = [re.search(r"\(gate ([^)\s]+)\)", u.content.text).group(1) for u in aside()]  # type: ignore[union-attr]
    assert len(told) == len(set(told)) == len(set(bogus))  # one "set aside" notice per bogus gate asked
    assert len(failed()) == len(set(bogus))  # and its card ends "failed", never left "in progress"


async def test_gates_appended_after_the_real_request_never_push_it_off_the_client() -> None:
    """The editor's prompt's request is with the human (not answered yet) when agy's step list grows
    20 bogus approvals of no running turn after it, more than the asks the agent keeps open (16). The
    human then answers the requests in the order they came: the first is the real one, and that
    answer is the one agy gets: the real request is asked once, and the first answer agy receives is
    for its step. Before: the 16th bogus gate made the real ask give way (cancelled on the wire; the
    SDK's client answers anyway), the human's allow for it was dropped, and it was asked again after
    the 20 bogus ones."""
    arrived = asyncio.Event()
    go = asyncio.Event()
    turn = asyncio.Lock()  # one human, one request at a time, in the order they came
    asked: list[str] = []

    async def allow(tool_call: Any, options: list[Any]) -> str:
        asked.append(tool_call.title)
        arrived.set()
        await go.wait()
        async with turn:
            await asyncio.sleep(0)
            return "allow"

    async with loaded(allow) as (agy, client, conn, sid):
        turn_done = asyncio.ensure_future(prompt(conn, sid, "run `touch real`"))
        await client.wait_for(lambda: any("touch real" in t for t in asked))
        real_index = next(
            i for i, s in enumerate(agy._cascade(None).steps) if s.get("status", "").endswith("WAITING")
        )
        bogus = flood_gates(agy, POISON)
        # as many as the agent keeps open are with the human (the rest wait for room)
        await client.wait_for(lambda: len(asked) >= 16)
        go.set()
        await client.wait_for(lambda: ("touch real", agy.workspace) in agy.executed, timeout=60)
        first = agy.received[0][1]
        assert first["stepIndex"] == real_index  # the human's first answer went to agy
        assert [t for t in asked if "touch real" in t][1:] == []  # asked once
        assert min(bogus) > real_index
        assert (await turn_done).stop_reason == "end_turn"
