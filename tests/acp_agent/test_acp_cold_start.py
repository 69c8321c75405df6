"""``agy-harness acp --start-agy``: an editor that starts before agy gets one, in tmux, and the errors
a user reads when agy cannot be told apart. The agent runs in a PID namespace of its own (``unshare``,
root in the tests' environment), so discovery sees only the agy it started, never another test's or
another user's; the tmux server it starts dies with that namespace."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from acp import RequestError

from agy_harness.adapters.simulator.scenarios import GREETING

from .helpers import RecordingClient, acp_agent, prompt

ALONE = ("unshare", "--fork", "--pid", "--mount-proc")
TUI = f"{shlex.quote(sys.executable)} -m agy_harness.adapters.simulator.tui --pace 0.05"


def _tmux(tmp: Path, *args: str) -> str:
    socket = tmp / f"tmux-{os.getuid()}" / "default"
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True).stdout


async def pane_with_listeners(tmp: Path, name: str, command: str, listeners: int) -> tuple[str, list[Any]]:
    """A tmux session ``name`` (server under ``tmp``) running ``command``, once ``listeners`` of its
    pane's processes listen (discovery waits for nothing): the pane id and those processes."""
    (tmp / f"tmux-{os.getuid()}").mkdir(mode=0o700, exist_ok=True)
    socket = str(tmp / f"tmux-{os.getuid()}" / "default")
    subprocess.run(
        ["tmux", "-S", socket, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", command], check=True
    )
    pane_pid = int(_tmux(tmp, "display-message", "-p", "-t", name, "#{pane_pid}"))
    listening: list[Any] = []
    for _ in range(300):
        listening = [p for p in psutil.Process(pane_pid).children() if p.net_connections(kind="tcp")]
        if len(listening) == listeners:
            break
        await asyncio.sleep(0.1)
    return _tmux(tmp, "display-message", "-p", "-t", name, "#{pane_id}").strip(), listening


@contextlib.asynccontextmanager
async def agy_started(project: Path, env: dict[str, str]) -> AsyncIterator[tuple[Any, str]]:
    """``acp --start-agy`` alone in its PID namespace, agy's TUI as tmux session ``agy-test``: a session
    in ``project`` said hello, and agy runs, idle, alone in the default tmux server under
    ``env["TMUX_TMPDIR"]`` (where ``tmux attach -t agy-test`` finds it). ``(connection, session id)``."""
    tmp = Path(env["TMUX_TMPDIR"])
    client = RecordingClient()
    agent = acp_agent(
        client, "--start-agy", "--agy-command", TUI, "--agy-session", "agy-test", where=(), env=env, wrap=ALONE
    )
    async with agent as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
        assert client.text(sid) == GREETING
        assert _tmux(tmp, "list-sessions", "-F", "#{session_name}").split() == ["agy-test"]
        assert "agy 1.0.10 · idle" in _tmux(tmp, "capture-pane", "-p", "-t", "agy-test")  # agy's TUI
        yield conn, sid


async def test_start_agy_in_tmux_when_none_runs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "TMUX_TMPDIR": str(tmp_path), "AGY_HARNESS_STATE_DIR": str(tmp_path / "state")}
    async with agy_started(project, env) as (conn, sid):
        # the user can attach to it: a tmux session of that name, in the client's directory
        assert _tmux(
            tmp_path, "display-message", "-p", "-t", "agy-test", "#{pane_current_path}"
        ).strip() == str(project)
        # a second session binds the same agy, nothing new is started
        other = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        assert other != sid
        assert _tmux(tmp_path, "list-sessions", "-F", "#{session_name}").split() == ["agy-test"]
        # the editor's project lists them; a session in another directory is refused, not re-rooted
        listed = {s.session_id for s in (await conn.list_sessions(cwd=str(project))).sessions}
        assert {sid, other} <= listed
        with pytest.raises(RequestError) as err:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert err.value.code == -32004 and err.value.data["workspace"] == str(project)


async def test_without_start_agy_no_agy_is_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    client = RecordingClient()
    async with acp_agent(client, where=(), wrap=ALONE) as conn:
        with pytest.raises(RequestError) as err:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
    assert err.value.code == -32001
    assert "--start-agy" in str(err.value)


async def test_two_agy_in_the_pane_is_ambiguous(tmp_path: Path) -> None:
    """``--tmux PANE``: discovery looks under that pane only; two agy there is refused, not guessed."""
    env = {**os.environ, "TMUX_TMPDIR": str(tmp_path)}
    sim = f"{shlex.quote(sys.executable)} -m agy_harness.adapters.simulator </dev/null"
    both = f"sh -c {shlex.quote(f'{sim} & {sim} & wait')}"
    try:
        pane, _ = await pane_with_listeners(tmp_path, "two", both, 2)
        client = RecordingClient()
        async with acp_agent(client, "--tmux", pane, where=(), env=env) as conn:
            with pytest.raises(RequestError) as err:
                await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert err.value.code == -32003
        assert str(err.value).startswith("More than one agy is running")
        assert len(err.value.data["ports"]) == 2
    finally:
        _tmux(tmp_path, "kill-server")
