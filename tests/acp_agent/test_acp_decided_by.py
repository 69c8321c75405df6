"""The ACP tool call of a gate, once answered, says who answered it and where (issue #36): the
editor's client (the official SDK's) reads it in the tool call's final update."""

from __future__ import annotations

import re
from typing import Any

from .helpers import RecordingClient, prompt
from .shared_agent import SHARED, SharedAgent
from .test_acp_agent import _calls, _new


@SHARED
async def test_the_final_update_says_who_allowed_and_who_denied(sim_agent: SharedAgent) -> None:
    async def policy(tool_call: Any, options: list[Any]) -> str:
        return "deny" if "rm " in str(tool_call.raw_input) else "allow"

    client = RecordingClient(permission=policy)
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        await prompt(conn, sid, "run: git status")
        await prompt(conn, sid, "run: rm -rf build")
    said = []
    for _, asked, _ in client.permission_requests:
        card = _calls(client, sid)[asked.tool_call_id]
        assert card[-1].status in ("completed", "failed")
        said.append(card[-1].content[-1].content.text)
    assert re.fullmatch(r"allowed by you on the editor \(ACP\), \d\d:\d\d", said[0]), said
    assert re.fullmatch(r"denied by you on the editor \(ACP\), \d\d:\d\d", said[1]), said
