"""omnigent's own terminal chat, driven as a person would: ``omnigent run <the README's agent> --server
URL`` (no ``-p``) in a tmux pane, keys typed with send-keys, the screen read with capture-pane. omnigent's
server, host daemon, runner, harness process and chat are all omnigent 0.19.1's own; agy is the
simulator. What is asserted is what the user sees (the chat's screen, the session's pending cards) and
what reached agy.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING
from tests.real_omnigent import OmnigentServer, server_env

from .conftest import agent_dir

if shutil.which("tmux") is None:  # (in CI a skip fails the run: tests/ci_skips.py)
    pytest.skip("the tmux binary is not on PATH (.ci/run installs it)", allow_module_level=True)

import libtmux

pytestmark = pytest.mark.asyncio(loop_scope="module")
WAIT = 60.0
CARD = "y = approve once"
PROMPT = "state: sleeping"  # the chat's status line once a turn is over


@dataclass
class Chat:
    tmux: libtmux.Server
    pane_id: str
    url: str
    sim: Simulator
    http: httpx.AsyncClient
    session_id: str = ""

    def screen(self) -> str:
        out = self.tmux.cmd("capture-pane", "-p", "-J", "-S", "-5000", "-t", self.pane_id).stdout
        return "\n".join(row.rstrip() for row in out)

    def type(self, text: str) -> None:
        self.tmux.cmd("send-keys", "-t", self.pane_id, "-l", "--", text)
        self.tmux.cmd("send-keys", "-t", self.pane_id, "Enter")

    async def wait(self, what: str, *, since: str = "", timeout: float = WAIT) -> str:
        """The screen once it shows ``what`` more often than it did in ``since`` (an earlier screen)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            screen = self.screen()
            if screen.count(what) > since.count(what):
                return screen
            if loop.time() > end:
                raise AssertionError(f"the chat never showed {what!r}:\n{screen[-6000:]}")
            await asyncio.sleep(0.1)

    async def idle(self, timeout: float = WAIT) -> None:
        """Until the chat's status line (its bottom row) says the turn is over."""
        async with asyncio.timeout(timeout):
            while True:
                rows = [r.rstrip() for r in self.tmux.cmd("capture-pane", "-p", "-t", self.pane_id).stdout]
                if any(PROMPT in r for r in rows[-3:] if r):
                    return
                await asyncio.sleep(0.1)

    async def pending(self) -> list[dict[str, Any]]:
        session = (await self.http.get(f"/v1/sessions/{self.session_id}")).json()
        return list(session.get("pending_elicitations") or [])

    async def turn(self, text: str) -> str:
        """Type a turn at the chat's prompt; the screen before it (for :meth:`wait`)."""
        before = self.screen()
        self.type(text)
        await self.wait(text, since=before)
        if not self.session_id:
            rows = (await self.http.get("/v1/sessions")).json()["data"]
            self.session_id = rows[0]["id"]
        return before


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chat(plugin_python: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Chat]:
    tmp = tmp_path_factory.mktemp("chat")
    srv = OmnigentServer(tmp / "server", venv=plugin_python.parent.parent)
    await asyncio.to_thread(srv.start)
    home = tmp / "client"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text("tui:\n  theme: light\n")  # no first-run theme picker
    (tmp / "tmux.conf").write_text("set -g history-limit 100000\n")  # the whole conversation stays readable
    tmux = libtmux.Server(
        socket_name=f"agyh-chat-{os.getpid()}-{uuid.uuid4().hex[:8]}", config_file=str(tmp / "tmux.conf")
    )
    try:
        async with (
            Simulator(profile="1.0.10", pace=0.05, gate_timeout=None) as sim,
            httpx.AsyncClient(base_url=srv.url, timeout=30) as http,
        ):
            agent = agent_dir(tmp, sim)
            env = server_env(home)
            exports = " ".join(
                f"{k}={shlex.quote(v)}"
                for k, v in env.items()
                if k.startswith(("OMNIGENT_", "DO_NOT", "PYTHON"))
            )
            command = f"{plugin_python} -m omnigent run {agent} --server {srv.url}"
            script = f"cd {shlex.quote(str(home))}; export {exports}; {command}; echo EXIT=$?; sleep 600"
            session = tmux.new_session(
                session_name="chat",
                window_command=f"bash --norc --noprofile -c {shlex.quote(script)}",
                x=200,
                y=60,
            )
            pane = session.active_window.active_pane
            assert pane is not None and pane.pane_id is not None
            chat = Chat(tmux, pane.pane_id, srv.url, sim, http)
            await chat.idle()
            yield chat
            chat.tmux.cmd("send-keys", "-t", chat.pane_id, "C-c")
            await asyncio.sleep(1.0)
    finally:
        tmux.kill()
        await asyncio.to_thread(srv.stop)


def question_steps(sim: Simulator) -> list[dict[str, Any]]:
    return [s["askQuestion"]["questions"][0] for s in sim.steps() if s["type"].endswith("ASK_QUESTION")]


async def test_a_question_answered_with_an_option_in_the_chat_reaches_agy(chat: Chat) -> None:
    mark = await chat.turn("ask: which part should we work on first?")
    card = (await chat.wait(CARD, since=mark))[len(mark) - 2000 :]
    assert "1 = (Recommended) Start with the core logic." in card and "2 = Start with the tests." in card
    chat.type("y")
    await chat.wait("type an option's number", since=mark)
    chat.type("2")
    await chat.wait("You chose: Start with the tests.", since=mark)
    await chat.idle()
    assert question_steps(chat.sim)[-1]["selectedOptionIds"] == ["2"]
    assert await chat.pending() == []


async def test_a_multi_select_question_takes_several_numbers(chat: Chat) -> None:
    mark = await chat.turn("ask multiple: which parts should we test?")
    await chat.wait(CARD, since=mark)
    chat.type("y")
    await chat.wait("comma-separated", since=mark)
    chat.type("1, 3")
    await chat.idle()
    assert question_steps(chat.sim)[-1]["selectedOptionIds"] == ["1", "3"]
    assert chat.screen().count("You chose: ") > mark.count("You chose: ")


async def test_a_written_answer_reaches_agy_as_the_write_in(chat: Chat) -> None:
    mark = await chat.turn("ask: which database should we use?")
    await chat.wait(CARD, since=mark)
    chat.type("y")
    await chat.wait("your own answer", since=mark)
    chat.type("PostgreSQL 16, please")
    await chat.wait("You chose: PostgreSQL 16, please.", since=mark)
    assert question_steps(chat.sim)[-1]["writeInResponse"] == "PostgreSQL 16, please"


async def test_a_command_approved_in_the_chat_runs(chat: Chat) -> None:
    mark = await chat.turn("run: git status")
    await chat.wait(CARD, since=mark)
    assert [c["params"].get("command") for c in await chat.pending()] == ["git status"]
    chat.type("y")
    await chat.wait("git status ran (exit code 0)", since=mark)
    await chat.idle()
    assert await chat.pending() == []


async def test_a_command_answered_in_agys_terminal_leaves_no_card(chat: Chat) -> None:
    mark = await chat.turn("run: git log -n 1")
    await chat.wait(CARD, since=mark)
    assert [c["params"].get("command") for c in await chat.pending()] == ["git log -n 1"]
    await chat.sim.resolve_in_terminal(kind="permission")
    async with asyncio.timeout(1.0):  # the sidebar, the cold-load replay: gone within a second
        while await chat.pending():
            await asyncio.sleep(0.05)
    await chat.wait("git log -n 1 ran (exit code 0)", since=mark)
    await chat.idle()
    # the chat takes the next line as a turn again: no prompt was left waiting for it
    mark = await chat.turn("Say hello in one short sentence.")
    await chat.wait(GREETING, since=mark)
    await chat.idle()
