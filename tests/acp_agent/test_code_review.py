"""agy's file-edit review in an editor (the official ACP SDK's client, ``agy-harness acp --port`` on a
simulator the test runs): the tool call carries agy's diff (``{type: "diff", path, oldText,
newText}``), the permission request offers Accept / Reject, and the choice reaches agy by
``AcknowledgeCodeActionStep``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.code_review import contents

from .helpers import RecordingClient, acp_agent, prompt


async def _reviewed(choice: str) -> tuple[RecordingClient, Simulator, str, Any]:
    async def choose(tool_call: Any, options: list[Any]) -> str:
        return choice

    async with Simulator(pace=0.05) as agy:
        client = RecordingClient(permission=choose)
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = str((await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id)
            response = await asyncio.wait_for(prompt(conn, sid, "edit the file notes.txt"), 60)
            assert response.stop_reason == "end_turn"
            return client, agy, sid, response


@pytest.mark.parametrize("choice", ["allow", "deny"])
async def test_the_editor_shows_agys_diff_and_its_choice_reaches_agy(choice: str) -> None:
    client, agy, sid, _ = await _reviewed(choice)
    path = f"{agy.workspace}/notes.txt"
    old, new = contents("notes.txt")
    (_, asked, options) = client.permission_requests[0]
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("allow", "Accept", "allow_once"),
        ("deny", "Reject", "reject_once"),
    ]
    assert asked.title == f"agy asks to edit {path} (accept or reject its diff)"
    diffs = [c for c in asked.content if c.type == "diff"]
    assert [(d.path, d.old_text, d.new_text) for d in diffs] == [(path, old.rstrip("\n"), new.rstrip("\n"))]
    card = next(u for u in client.of(sid, "tool_call") if u.tool_call_id == asked.tool_call_id)
    assert card.status == "pending" and [loc.path for loc in card.locations] == [path]
    updates = [u for u in client.of(sid, "tool_call_update") if u.tool_call_id == asked.tool_call_id]
    assert updates[-1].status == ("completed" if choice == "allow" else "failed")  # never left pending
    verdict = "accepted" if choice == "allow" else "rejected"
    assert f"the edit of {path} was {verdict}" in [c.content.text for c in updates[-1].content]
    accepted = choice == "allow"
    index = next(i for i, s in enumerate(agy.steps(sid)) if s["type"].endswith("CODE_ACTION"))
    assert agy.acknowledged == [
        {
            "cascadeId": sid,
            "accept": accepted,
            "acknowledgementScope": "CODE_ACKNOWLEDGEMENT_SCOPE_FILE",
            "codeAcknowledgementRequestInfos": [{"uriPath": path, "stepIndices": [index]}],
        }
    ]
    assert agy.received == []  # never HandleCascadeUserInteraction
    assert agy.files[path] == (new if accepted else old)  # what the person finds on disk
    said = client.text(sid)
    assert ("I applied the edit to notes.txt." in said) is accepted
    assert ("You rejected the edit to notes.txt, so it was not applied." in said) is not accepted
