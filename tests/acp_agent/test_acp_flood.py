"""A flood of bogus gates through the ACP agent (issue #35, case 8), with the SDK's client: 20 WAITING
approvals agy refuses any answer to, then the editor's prompt for a real command. One human allows
every permission request, one at a time. The real request reaches them, each bogus one is asked once
(one that gave way to a newer gate before its answer may come back: a few), each says "set aside"
once, and its card ends "failed" (before the fix the 20 bogus cards stayed "in_progress" for good)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates

from .helpers import RecordingClient, acp_agent, prompt

POISON = 20


async def test_a_flood_of_bogus_gates_is_set_aside_and_the_real_request_is_asked() -> None:
    turn = asyncio.Lock()  # one human, one request at a time
    asked: list[str] = []  # the title of every permission request, in order

    async def allow(tool_call: Any, options: list[Any]) -> str:
        async with turn:
            asked.append(tool_call.title)
            await asyncio.sleep(0)
            return "allow"

    async with Simulator(pace=0, gate_timeout=None) as agy:
        await agy.submit_user_turn("say hello")
        await agy.wait_idle(timeout=30)
        client = RecordingClient(permission=allow)
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = agy.cascade_id
            await conn.load_session(cwd=agy.workspace, session_id=sid, mcp_servers=[])
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
    told = [re.search(r"to gate (\S+)", u.content.text).group(1) for u in aside()]  # type: ignore[union-attr]
    assert len(told) == len(set(told)) == len(set(bogus))  # one "set aside" notice per bogus gate asked
    assert len(failed()) == len(set(bogus))  # and its card ends "failed", never left "in progress"
