"""``agy-harness acp`` started by an editor that was started from a tmux window: ``TMUX`` (and
``TMUX_PANE``) name the server of that window, a real tmux server other than the user's default one.

* ``--start-agy`` starts agy in the user's default tmux server (``$TMUX_TMPDIR/tmux-UID/default``,
  where ``tmux attach -t NAME`` from any terminal finds it) and binds that agy; the inherited server gets
  nothing. (It used to start agy in the inherited server, where neither the hint nor discovery found it.)
* ``--tmux PANE`` names a pane the way the tmux command does from that window: in the inherited server,
  not a pane of the same id in the default server.

The suite forgets the caller's ``TMUX`` (tests/conftest.py); these tests set it on purpose."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agy_harness.adapters.simulator.scenarios import GREETING

from .helpers import RecordingClient, acp_agent, prompt
from .test_acp_cold_start import agy_started


def _on(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True, text=True).stdout


@pytest.fixture
def editors_tmux(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A real tmux server of the user's other than the default one (``tmux -S``, as ``tmux -L work``),
    whose window the editor was started from: its socket and the environment that window gives."""
    socket = tmp_path / "work.sock"
    subprocess.run(["tmux", "-S", str(socket), "new-session", "-d", "-s", "editor", "sleep 600"], check=True)
    pane = _on(socket, "display-message", "-p", "-t", "editor", "#{pane_id}").strip()
    server_pid = _on(socket, "display-message", "-p", "#{pid}").strip()
    env = {
        **os.environ,
        "TMUX_TMPDIR": str(tmp_path),  # the default server: tmp_path/tmux-UID/default
        "TMUX": f"{socket},{server_pid},0",
        "TMUX_PANE": pane,
    }
    try:
        yield socket, env
    finally:
        _on(socket, "kill-server")


async def test_start_agy_ignores_the_tmux_the_editor_inherited(
    tmp_path: Path, editors_tmux: tuple[Path, dict[str, str]]
) -> None:
    socket, env = editors_tmux
    project = tmp_path / "project"
    project.mkdir()
    # agy runs in the user's default server (agy_started checks it), the inherited one holds only the
    # editor's window
    async with agy_started(project, env):
        assert _on(socket, "list-sessions", "-F", "#{session_name}").split() == ["editor"]


async def test_tmux_pane_is_the_pane_of_the_inherited_server(
    tmp_path: Path, editors_tmux: tuple[Path, dict[str, str]]
) -> None:
    """The default server has a pane of the same id running no agy; the inherited server's pane runs
    the simulator: ``--tmux PANE`` binds the latter."""
    socket, env = editors_tmux
    (tmp_path / f"tmux-{os.getuid()}").mkdir(mode=0o700)
    sim = f"{shlex.quote(sys.executable)} -m agy_harness.adapters.simulator --pace 0 </dev/null"
    _on(socket, "new-session", "-d", "-s", "agy", "-c", str(tmp_path), sim)  # agy works in the editor's project
    pane = _on(socket, "display-message", "-p", "-t", "agy", "#{pane_id}").strip()
    default = tmp_path / f"tmux-{os.getuid()}" / "default"
    _on(default, "new-session", "-d", "-s", "s0", "sleep 600")
    _on(default, "new-session", "-d", "-s", "s1", "sleep 600")
    try:
        assert pane in _on(default, "list-panes", "-a", "-F", "#{pane_id}").split()  # the same id there
        client = RecordingClient()
        async with acp_agent(client, "--tmux", pane, where=(), env=env) as conn:
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
            assert client.text(sid) == GREETING
    finally:
        _on(default, "kill-server")
