"""$/cancel_request for a prompt of a session closed meanwhile: a logged outcome, not a failed task."""

from __future__ import annotations

import asyncio
from typing import Any

from agy_harness.adapters.simulator.scenarios import GREETING

from .helpers import RecordingClient, acp_agent, prompt


async def test_cancel_request_for_a_prompt_of_a_closed_session_is_handled() -> None:
    sent: list[Any] = []
    log: list[str] = []

    async def never(tool_call: Any, options: list[Any]) -> str | None:
        await asyncio.Event().wait()
        return None

    client = RecordingClient(permission=never)
    async with acp_agent(client, "--sim-pace", "0.05", observe=sent, log=log, verbose=2) as conn:
        sid = str((await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id)
        turn = asyncio.create_task(prompt(conn, sid, "run: git status"))
        await client.wait_for(lambda: bool(client.permission_requests))
        (request,) = [e.message for e in sent if e.message.get("method") == "session/prompt"]
        closing = asyncio.create_task(conn.close_session(session_id=sid))
        await conn._conn.send_notification("$/cancel_request", {"requestId": request["id"]})
        await closing
        assert (await turn).stop_reason == "cancelled"
        sid = str((await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id)
        assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
        assert client.text(sid).endswith(GREETING)
    assert "never retrieved" not in log[0]
