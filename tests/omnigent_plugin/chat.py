"""omnigent's own terminal chat in a tmux pane, driven as a person would: ``omnigent run <the README's
agent> --server URL`` (no ``-p``), keys typed with send-keys, the screen read with capture-pane, and the
session's state read from omnigent's server (what its web UI shows). omnigent's server, host daemon,
runner, harness process and chat are all omnigent 0.19.1's own; agy is the simulator."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import libtmux

from agy_harness.adapters.simulator import Simulator
from tests.real_omnigent import server_env
from tests.tmux_sockets import tmux_dir

from .conftest import agent_dir, new_session, session_ids, stop_new_sessions

WAIT = 60.0
LAUNCH_WAIT = 300.0  # omnigent's chat starting (server, host daemon, runner) on a loaded machine
CARD = "y = approve once"
PROMPT = "state: sleeping"  # the chat's status line once a turn is over
STALL = "Press ENTER to continue..."  # prompt_toolkit, after an exception in the chat's event loop
TOKENIZER = (
    "cl100k_base"  # ... tiktoken's encoding, which omnigent's chat downloads (Chat.dismiss_tokenizer_stall)
)
#: seconds between reads of omnigent's server while a test waits on it: a GET of a session costs the
#: server ~23 ms of CPU (measured), so 20 reads a second kept half a core busy for the whole wait
SERVER_POLL = 0.25
#: seconds between reads of the chat's pane while a test waits on it (each read is a tmux client process)
SCREEN_POLL = 0.2


@dataclass
class Chat:
    tmux: libtmux.Server
    pane_id: str
    url: str
    sim: Simulator
    http: httpx.AsyncClient
    known: set[str]  # the server's sessions before the chat started (a shared server: conftest.py)
    session_id: str = ""

    def screen(self) -> str:
        out = self.tmux.cmd("capture-pane", "-p", "-J", "-S", "-5000", "-t", self.pane_id).stdout
        return "\n".join(row.rstrip() for row in out)

    def rows(self) -> list[str]:
        """The pane's rows as shown now (no history)."""
        return [r.rstrip() for r in self.tmux.cmd("capture-pane", "-p", "-t", self.pane_id).stdout]

    def type(self, text: str) -> None:
        self.dismiss_tokenizer_stall()
        self.tmux.cmd("send-keys", "-t", self.pane_id, "-l", "--", text)
        self.tmux.cmd("send-keys", "-t", self.pane_id, "Enter")

    def dismiss_tokenizer_stall(self, rows: list[str] | None = None) -> None:
        """Press Enter where omnigent's chat stopped on its own offline tokenizer error, as a person would.

        When a turn goes idle or waits on a card before the harness reported the turn's usage,
        omnigent 0.19.1's chat estimates the context ring itself (``repl/_repl.py``
        ``_update_context_ring_estimate``: tiktoken's ``cl100k_base``, downloaded on first use).
        Without network the download fails in a background task, and prompt_toolkit prints the
        exception and waits: "Press ENTER to continue...", eating the keys typed next (a turn or a
        card's answer was lost: test_terminal_only_clicks failed so). Only that error is dismissed
        (the screen names ``cl100k_base``); any other stops the test as before. ``rows``: the pane's
        rows just read (:meth:`rows`), else read here."""
        if not self.stalled(rows):
            return
        self.tmux.cmd("send-keys", "-t", self.pane_id, "Enter")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if not any(STALL in r for r in self.rows()[-4:]):
                return
            time.sleep(0.05)

    def stalled(self, rows: list[str] | None = None) -> bool:
        """omnigent's chat waits for Enter after its offline tokenizer error (:meth:`dismiss_tokenizer_stall`);
        ``rows``: the pane's rows just read, else read here."""
        rows = self.rows() if rows is None else rows
        return any(STALL in r for r in rows[-4:]) and TOKENIZER in self.screen()[-8000:]

    async def wait(self, what: str, *, since: str = "", timeout: float = WAIT) -> str:
        """The screen once it shows ``what`` more often than it did in ``since`` (an earlier screen)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            # one read of the pane a poll (each is a tmux client process): the stall, when the screen's
            # end shows its prompt (the whole history ends with the visible rows), dismissed first
            screen = self.screen()
            if STALL in screen[-2000:]:
                self.dismiss_tokenizer_stall()
                screen = self.screen()
            if screen.count(what) > since.count(what):
                return screen
            if loop.time() > end:
                raise AssertionError(f"the chat never showed {what!r}:\n{screen[-6000:]}")
            await asyncio.sleep(SCREEN_POLL)

    def status(self) -> list[str]:
        """The chat's bottom rows (its status line), as shown now (past omnigent's offline tokenizer
        stall, dismissed first: :meth:`dismiss_tokenizer_stall`)."""
        rows = self.rows()
        if any(STALL in r for r in rows[-4:]):
            self.dismiss_tokenizer_stall(rows)
            rows = self.rows()
        return [r for r in rows[-3:] if r]

    def sleeping(self) -> bool:
        """The chat's status line says no turn runs."""
        return any(PROMPT in r for r in self.status())

    async def idle(self, timeout: float = WAIT) -> None:
        """Until the chat's status line (its bottom row) says the turn is over."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not self.sleeping():
            if loop.time() > end:
                raise AssertionError("the chat's turn never ended:\n" + "\n".join(self.status()))
            await asyncio.sleep(SCREEN_POLL)

    async def pending(self) -> list[dict[str, Any]]:
        """The session's pending cards, as omnigent's web UI lists them."""
        session = (await self.http.get(f"/v1/sessions/{self.session_id}")).json()
        return list(session.get("pending_elicitations") or [])

    async def card(self, timeout: float = WAIT) -> dict[str, Any]:
        """The one pending card, once there is one."""
        async with asyncio.timeout(timeout):
            while not (cards := await self.pending()):
                await asyncio.sleep(SERVER_POLL)
        [card] = cards
        return card

    async def no_card(self, timeout: float = WAIT) -> None:
        """No pending card, waited for (the sidebar count, the cold-load replay); ``timeout`` bounds a
        hang, generous for a loaded machine."""
        async with asyncio.timeout(timeout):
            while await self.pending():
                await asyncio.sleep(SERVER_POLL)

    async def resolve(self, card: dict[str, Any], result: dict[str, Any]) -> int:
        """Answer ``card`` on omnigent's web UI route (``POST .../elicitations/{id}/resolve``)."""
        eid = card["elicitation_id"]
        response = await self.http.post(
            f"/v1/sessions/{self.session_id}/elicitations/{eid}/resolve", json=result
        )
        return response.status_code

    async def turn(self, text: str) -> str:
        """Type a turn at the chat's prompt; the screen before it (for :meth:`wait`)."""
        before = self.screen()
        self.type(text)
        loop = asyncio.get_running_loop()
        end = loop.time() + WAIT
        stalls = before.count(STALL)
        while (screen := self.screen()).count(text) <= before.count(text):
            if screen.count(STALL) > stalls and TOKENIZER in screen:
                # the stall came just after the keys and ate them (the turn's text never showed; our
                # Enter may have dismissed it): dismissed if it still waits, and the turn typed again
                stalls = screen.count(STALL)
                self.dismiss_tokenizer_stall()
                self.type(text)
            if loop.time() > end:
                raise AssertionError(f"the chat never showed {text!r}:\n{self.screen()[-6000:]}")
            await asyncio.sleep(0.1)
        if not self.session_id:
            self.session_id = await new_session(self.http, self.known)
        return before


@asynccontextmanager
async def open_chat(
    plugin_python: Path, tmp: Path, *, server: str, home: Path, pace: float = 0.05
) -> AsyncIterator[Chat]:
    """The chat on ``server`` (a shared omnigent server's URL: ``plugin_server``; the chat's session is
    the one it adds there) from the client home ``home`` (``plugin_host``, whose host daemon hosts the
    session; the chat's session, and so its runner, is stopped after), the simulator (at ``pace``)
    behind it."""
    (tmp / "tmux.conf").write_text("set -g history-limit 100000\n")  # the whole conversation stays readable
    socket_name = f"agyh-chat-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmux = libtmux.Server(socket_name=socket_name, config_file=str(tmp / "tmux.conf"))
    known: set[str] | None = None
    try:
        async with (
            Simulator(profile="1.0.10", pace=pace, gate_timeout=None) as sim,
            httpx.AsyncClient(base_url=server, timeout=30) as http,
        ):
            agent = agent_dir(tmp, sim)
            known = await session_ids(http)
            env = server_env(home)
            exports = " ".join(
                f"{k}={shlex.quote(v)}"
                for k, v in env.items()
                if k.startswith(("OMNIGENT_", "DO_NOT", "PYTHON"))
            )
            command = f"{plugin_python} -m omnigent run {agent} --server {server}"
            script = f"cd {shlex.quote(str(home))}; export {exports}; {command}; echo EXIT=$?; sleep 600"
            session = tmux.new_session(
                session_name="chat",
                window_command=f"bash --norc --noprofile -c {shlex.quote(script)}",
                x=200,
                y=60,
            )
            pane = session.active_window.active_pane
            assert pane is not None and pane.pane_id is not None
            chat = Chat(tmux, pane.pane_id, server, sim, http, known)
            await chat.idle(timeout=LAUNCH_WAIT)
            yield chat
            chat.tmux.cmd("send-keys", "-t", chat.pane_id, "C-c")
            await asyncio.sleep(1.0)
    finally:
        tmux.kill()
        with contextlib.suppress(OSError):  # kill-server leaves the socket file (tests/tmux_sockets.py)
            (tmux_dir() / socket_name).unlink()
        if known is not None:  # the chat's session on the shared host: its runner stopped
            async with httpx.AsyncClient(base_url=server, timeout=60) as http:
                await stop_new_sessions(http, known)
