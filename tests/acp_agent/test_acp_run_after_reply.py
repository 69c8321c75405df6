"""A prompt ends when agy's run does, not at agy's final reply: agy may work on after it (on a
conversation's first turn it writes a checkpoint, the title, after the reply; recorded in
``checkpoint.json``). ``agy-harness acp --port`` on a simulator held after its reply until the test
lets it finish, driven by the ACP SDK's client."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING
from tests.held_reply import hold_after_reply

from .helpers import RecordingClient, acp_agent, prompt

LISTING = "GetAllCascadeTrajectories"
WAIT = 60.0


async def test_the_prompt_ends_when_agys_run_does_not_at_its_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    replied, release = hold_after_reply(monkeypatch)
    client = RecordingClient()
    async with (
        Simulator(pace=0.05, gate_timeout=None) as agy,
        acp_agent(client, where=("--port", str(agy.port))) as conn,
    ):
        sid = str((await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id)
        answer = asyncio.create_task(prompt(conn, sid, "Say hello in one short sentence."))
        async with asyncio.timeout(WAIT):
            await replied.wait()
            await client.wait_for(lambda: client.text(sid) == GREETING or answer.done(), timeout=WAIT)
            # agy was asked for its run status again and again since: it still runs, the prompt goes on
            asked = agy.calls.count(LISTING)
            while agy.calls.count(LISTING) < asked + 5 and not answer.done():
                await asyncio.sleep(0.02)
        assert not answer.done(), answer.result()
        assert agy.is_running(sid)
        release.set()
        response = await asyncio.wait_for(answer, WAIT)
        assert response.stop_reason == "end_turn"
        assert not agy.is_running(sid)  # the prompt ended only after agy's turn had
        assert agy.steps(sid)[-1]["type"] == "CORTEX_STEP_TYPE_CHECKPOINT"
        assert client.text(sid) == GREETING
