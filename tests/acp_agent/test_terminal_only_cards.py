"""issue 45: an ACP card of a gate only agy's terminal can answer ends as agy's outcome was
(``completed`` allowed, ``failed`` refused or given up), never ``pending`` forever; and it says
"answer in agy's terminal" once, on every render of the card. Driven through the ACP SDK's client
side against ``agy-harness acp`` on the simulator. The gate is ``artifactReviewPolicy`` (a GENERIC
step: no tool result of its own ends its card), a kind nothing here answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agy_harness.adapters.simulator import Simulator

from .helpers import RecordingClient, prompt
from .shared_agent import SHARED_IN_MODULE, SharedAgent, shared_agent

TURN = "kind: artifactReviewPolicy"


def _card(client: RecordingClient, sid: str) -> list[Any]:
    """Every update of the session's one gate card, in order."""
    updates = [u for u in client.of(sid) if u.session_update in ("tool_call", "tool_call_update")]
    first = next(u for u in updates if u.session_update == "tool_call" and u.status == "pending")
    return [u for u in updates if u.tool_call_id == first.tool_call_id]


def _said(updates: list[Any]) -> list[str]:
    return [c.content.text for u in updates for c in (u.content or []) if getattr(c, "type", "") == "content"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agy_and_agent() -> AsyncIterator[tuple[Simulator, SharedAgent]]:
    """One simulator and one ``agy-harness acp --port`` on it: each case its own session there."""
    async with Simulator(pace=0.05) as agy, shared_agent(where=("--port", str(agy.port))) as agent:
        yield agy, agent


@SHARED_IN_MODULE
@pytest.mark.parametrize(
    ("accept", "status"), [(True, "completed"), (False, "failed")], ids=["allowed", "refused"]
)
async def test_a_card_answered_in_agys_terminal_ends_as_agys_outcome(
    agy_and_agent: tuple[Simulator, SharedAgent], accept: bool, status: str
) -> None:
    agy, agent = agy_and_agent
    client = RecordingClient()
    async with agent.editor(client) as conn:
        sid = (await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id
        turn = asyncio.create_task(prompt(conn, sid, TURN))
        await client.wait_for(lambda: any(u.status == "pending" for u in client.of(sid, "tool_call")))
        assert client.permission_requests == [] and client.forms == []  # nobody is asked here
        await agy.resolve_in_terminal(sid, accept=accept)  # answered in agy's own terminal
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "end_turn"
        await client.wait_for(lambda: _card(client, sid)[-1].status is not None)
        card = _card(client, sid)
        assert [u.status for u in card if u.status][-1] == status  # never pending forever
        assert status == "completed" or "did not go on with it" in " ".join(_said(card[-1:]))
        # "answer it there" once: the pending card (title and body) says it; nothing beside it
        pending = card[0]
        shown = " ".join([pending.title, *_said([pending])])
        assert shown.count("terminal") == 1, shown
        assert "terminal" not in client.text(sid), client.text(sid)  # no notice repeating it
