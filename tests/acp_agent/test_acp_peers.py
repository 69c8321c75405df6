"""Issue #20's rule on the ACP agent: ``agy-harness acp`` binds only the user's own agy, whichever way
it finds agy (discovery with ``--start-agy``, ``--tmux PANE``, ``--port``). Another local user's
process named agy, whose ``--log-file`` names its port and which echoes any conversation id, is sent
nothing: no Heartbeat (it carries the csrf token), no conversation, no turn."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path

import pytest
from acp import RequestError

from agy_harness.adapters.simulator.scenarios import GREETING

from ..safety.other_user import hostile_argv, logged_port, received, run_hostile, shared_dir
from .helpers import RecordingClient, acp_agent, prompt
from .test_acp_cold_start import ALONE, TUI, _tmux, pane_with_listeners


async def _hello(conn: object, sid: str) -> str:
    """A turn, bounded: a hostile agy that was bound takes the turn and never ends it."""
    async with asyncio.timeout(60):
        return str((await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason)


async def _until_listening(here: Path) -> int:
    for _ in range(300):
        port = logged_port(here)
        if port is not None:
            return port
        await asyncio.sleep(0.1)
    raise AssertionError("the other user's agy did not start")


async def test_start_agy_starts_the_users_own_agy_when_only_another_users_runs(tmp_path: Path) -> None:
    """In the agent's PID namespace the only agy is another user's, announced in its log: it is not
    the user's, so ``--start-agy`` starts the user's own agy and binds that one."""
    project = tmp_path / "project"
    project.mkdir()
    with shared_dir() as here:
        hostile = shlex.join(hostile_argv(here, "--log-file", str(here / "agy.log")))
        beside = ("sh", "-c", f'{hostile} >/dev/null 2>&1 & exec "$@"', "sh")  # then the agent
        client = RecordingClient()
        async with acp_agent(
            client, "--start-agy", "--agy-command", TUI, "--agy-session", "agy-own",
            where=(), env={**os.environ, "TMUX_TMPDIR": str(tmp_path)}, wrap=(*ALONE, *beside),
        ) as conn:  # fmt: skip
            await _until_listening(here)
            sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
            assert await _hello(conn, sid) == "end_turn"
            assert client.text(sid) == GREETING  # the user's own agy answered
            assert _tmux(tmp_path, "list-sessions", "-F", "#{session_name}").split() == ["agy-own"]
        assert received(here / "got.jsonl") == []


async def test_tmux_pane_discovery_binds_the_users_agy_not_another_users(tmp_path: Path) -> None:
    """``--tmux PANE``: discovery looks under that pane's process; another user's agy there is not
    a candidate (it used to make the pane ambiguous, or be bound), the user's own agy is bound."""
    with shared_dir() as here:
        hostile = shlex.join(hostile_argv(here, "--log-file", str(here / "agy.log")))
        sim = f"{shlex.quote(sys.executable)} -m agy_harness.adapters.simulator --pace 0 </dev/null"
        both = f"sh -c {shlex.quote(f'{hostile} >/dev/null 2>&1 & {sim} & wait')}"
        try:
            pane, listening = await pane_with_listeners(tmp_path, "pane", both, 2)
            assert {p.uids().real for p in listening} == {os.getuid(), os.stat(here / "agy.log").st_uid}
            client = RecordingClient()
            env = {**os.environ, "TMUX_TMPDIR": str(tmp_path)}
            async with acp_agent(client, "--tmux", pane, where=(), env=env) as conn:
                where = _tmux(tmp_path, "display-message", "-p", "-t", pane, "#{pane_current_path}").strip()
                sid = (await conn.new_session(cwd=where, mcp_servers=[])).session_id  # agy's directory
                assert await _hello(conn, sid) == "end_turn"
                assert client.text(sid) == GREETING
        finally:
            _tmux(tmp_path, "kill-server")
        assert received(here / "got.jsonl") == []


async def test_a_port_of_another_user_is_refused_in_a_sentence(tmp_path: Path) -> None:
    """``--port N`` where another user's process listens: a ``-32001`` that says whose port it is."""
    with shared_dir() as here, run_hostile(here) as port:
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(port))) as conn:
            with pytest.raises(RequestError) as err:
                await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert err.value.code == -32001
        assert str(err.value).startswith(
            f"Port {port} is served by another user of this machine, not by your agy: agy-harness sent it nothing."
        )
        assert err.value.data["othersPorts"] == [port]
        assert received(here / "got.jsonl") == []
