"""ACP's protocol details on ``agy-harness acp``, through the SDK's client: ``-32002`` for a session
that is not open, an idempotent ``session/close``, no traceback for a notification nobody takes, and
``$/cancel_request`` for a running prompt."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import RequestError

from agy_harness.adapters.simulator.scenarios import GREETING

from .helpers import RecordingClient, acp_agent, prompt
from .shared_agent import SHARED, SharedAgent

PACE = ("--sim-pace", "0.05")


async def _new(conn: Any) -> str:
    return str((await conn.new_session(cwd="/tmp", mcp_servers=[])).session_id)


@SHARED
async def test_a_session_that_is_not_open_is_32002_and_a_second_close_succeeds(
    sim_agent: SharedAgent,
) -> None:
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        with pytest.raises(RequestError) as err:
            await prompt(conn, "never-opened", "hello")
        assert err.value.code == -32002 and err.value.data["reason"] == "unknown_session"
        with pytest.raises(RequestError) as err:
            await conn.close_session(session_id="never-opened")
        assert err.value.code == -32002  # the TypeScript SDK reads exactly this as "already closed"

        sid = await _new(conn)
        await conn.close_session(session_id=sid)
        await conn.close_session(session_id=sid)  # closing is idempotent: the second close succeeds
        for call in (
            lambda: prompt(conn, sid, "Say hello in one short sentence."),
            lambda: conn.set_config_option(config_id="model", session_id=sid, value="MODEL_PLACEHOLDER_M71"),
        ):
            with pytest.raises(RequestError) as err:
                await call()
            assert err.value.code == -32002
        # loaded again, it is open again
        await conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"


async def test_a_notification_nobody_takes_is_a_debug_line_not_a_traceback() -> None:
    log: list[str] = []
    client = RecordingClient()
    async with acp_agent(client, *PACE, log=log, verbose=2) as conn:
        sid = await _new(conn)
        await conn._conn.send_notification("session/no_such_thing", {"sessionId": sid})
        await conn._conn.send_notification("$/cancel_request", {"requestId": 4242})  # no such request
        await conn._conn.send_notification("_vendor/hint", {})  # an extension: taken, and ignored
        # the agent goes on
        assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
    assert "Traceback" not in log[0]
    assert "notification session/no_such_thing not taken" in log[0]
    assert "notification $/cancel_request not taken (no such request)" in log[0]


@SHARED
async def test_cancel_request_for_a_running_prompt_cancels_it(sim_agent_slow: SharedAgent) -> None:
    sent = sim_agent_slow.observed  # what the editor sent and read (this session's: by its id)
    client = RecordingClient()
    async with sim_agent_slow.editor(client) as conn:  # a ~6 s reply
        sid = await _new(conn)
        turn = asyncio.create_task(prompt(conn, sid, "Write a long story about a lighthouse keeper."))
        await client.wait_for(lambda: bool(client.of(sid, "agent_message_chunk")))
        (request,) = [
            e.message
            for e in sent
            if e.message.get("method") == "session/prompt" and e.message["params"]["sessionId"] == sid
        ]
        await conn._conn.send_notification("$/cancel_request", {"requestId": request["id"]})
        assert (await turn).stop_reason == "cancelled"
        # the session takes the next turn
        assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
        assert client.text(sid).endswith(GREETING)


@SHARED
async def test_a_prompt_over_4_mib_ends(sim_agent: SharedAgent) -> None:
    """agy's echo of a long prompt is not the prompt's text (cut where agy or the harness cuts
    strings): the prompt is tied to its turn by order, not by comparing texts, and ends."""
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        text = "Say hello in one short sentence.\n" + "x" * (4 * 1024 * 1024 + 512 * 1024)
        async with asyncio.timeout(120):  # a bound for a hang, not a speed measure
            response = await prompt(conn, sid, text)
        assert response.stop_reason == "end_turn"
        assert client.text(sid) == GREETING
