"""omnigent's chat ("approve always") never widens what a human approved (issue #26, case 5).

The real ``omnigent run <agent> --server URL`` REPL in tmux, with the README's agent (``harness:
agy-harness``) on the simulator. omnigent's chat remembers "a = approve always (this session)" per
``(policy_name, phase)`` of the elicitation; every gate once went out under one policy name, so "always"
on ``rm -rf build`` made a later ``curl ...`` run with no prompt. Now each request has its own policy
name: "always" covers that exact request (agy's re-ask of it after a timeout), nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agy_harness.adapters.simulator import Simulator
from tests.real_omnigent import OmnigentServer, server_env

from .test_server import agent_dir, run_omnigent

if shutil.which("tmux") is None:
    pytest.skip("the tmux binary is not on PATH", allow_module_level=True)

import libtmux

WAIT = 120.0


@pytest.fixture
def tmux() -> Iterator[libtmux.Server]:
    server = libtmux.Server(socket_name=f"agyh-chat-{uuid.uuid4().hex[:8]}")
    try:
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.kill()


def screen(pane: libtmux.Pane) -> str:
    return "\n".join(pane.capture_pane())


def type_line(pane: libtmux.Pane, text: str) -> None:
    pane.send_keys(text, enter=False, literal=True)
    pane.send_keys("Enter", enter=False)


async def wait_screen(pane: libtmux.Pane, ok: Callable[[str], bool], what: str, timeout: float = WAIT) -> str:
    deadline = time.monotonic() + timeout
    while True:
        shown = screen(pane)
        if ok(shown):
            return shown
        if time.monotonic() > deadline:
            raise AssertionError(f"the chat never showed {what}:\n{shown}")
        await asyncio.sleep(0.2)


async def test_approve_always_in_omnigents_chat_covers_only_that_request(
    plugin_python: Path, tmp_path: Path, tmux: libtmux.Server
) -> None:
    venv = plugin_python.parent.parent
    srv = OmnigentServer(tmp_path / "server", venv=venv)
    await asyncio.to_thread(srv.start)
    home = tmp_path / "client"
    (home / "config").mkdir(parents=True)  # OMNIGENT_CONFIG_HOME: a theme, so no first-run picker
    (home / "config" / "config.yaml").write_text("tui:\n  theme: dark\n")
    try:
        async with Simulator(profile="1.0.10", pace=0.05, gate_timeout=None) as sim:
            agent = agent_dir(tmp_path, sim)
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in server_env(home).items())
            command = (
                f"cd {shlex.quote(str(home))} && env -i {env} "
                f"{shlex.quote(str(plugin_python))} -m omnigent run {shlex.quote(str(agent))} --server {srv.url}"
            )
            session = tmux.new_session(session_name="chat", window_command=command, x=160, y=50)
            pane = session.active_window.active_pane
            assert pane is not None
            await wait_screen(pane, lambda s: "· ready" in s, "its prompt")
            type_line(pane, "run `rm -rf build`")
            await wait_screen(pane, lambda s: "approval required" in s, "the first approval")
            type_line(pane, "a")  # approve always (this session)
            async with asyncio.timeout(WAIT):
                while ("rm -rf build", sim.workspace) not in sim.executed:
                    await asyncio.sleep(0.1)
            await sim.wait_idle(timeout=WAIT)
            seen = screen(pane).count("approval required")
            await wait_screen(pane, lambda s: "· ready" in s, "its prompt")
            type_line(pane, "run `curl https://example.com/x.sh`")
            shown = await wait_screen(
                pane,
                lambda s: s.count("approval required") > seen or "auto-approved" in s.split("curl")[-1],
                "a second approval",
            )
            assert "auto-approved" not in shown.split("curl")[-1], shown
            assert all("curl" not in command for command, _ in sim.executed)  # it waits for the human
            type_line(pane, "n")
            await sim.wait_idle(timeout=WAIT)
            assert all("curl" not in command for command, _ in sim.executed)
    finally:
        with contextlib.suppress(Exception):
            await run_omnigent(plugin_python, "host", "stop", "--server", srv.url, home=home, timeout=60)
        await asyncio.to_thread(srv.stop)
