"""A real tmux server on a private socket, with the simulated agy TUI running in a pane."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

SERVICE = "/exa.language_server_pb.LanguageServerService/"

if shutil.which("tmux") is None:
    pytest.skip("the tmux binary is not on PATH", allow_module_level=True)

import libtmux  # noqa: E402  (after the skip: libtmux needs the binary)

from agy_harness.composition.entrypoints.demo_tmux import start_tui as launch_tui  # noqa: E402


@dataclass
class TuiPane:
    server: libtmux.Server
    pane_id: str
    pid: int
    port: int
    cascade_id: str
    port_file: Path

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def capture(self) -> list[str]:
        out = self.server.cmd("capture-pane", "-p", "-J", "-t", self.pane_id)
        return [row.rstrip() for row in out.stdout]

    def send_literal(self, text: str) -> None:
        self.server.cmd("send-keys", "-t", self.pane_id, "-l", "--", text)

    def send_key(self, *keys: str) -> None:
        self.server.cmd("send-keys", "-t", self.pane_id, *keys)

    async def wait_screen(self, predicate: Callable[[list[str]], bool], timeout: float = 10.0) -> list[str]:
        deadline = time.monotonic() + timeout
        lines = self.capture()
        while not predicate(lines):
            if time.monotonic() > deadline:
                raise AssertionError("screen never matched:\n" + "\n".join(lines))
            await asyncio.sleep(0.05)
            lines = self.capture()
        return lines


class HttpSteps:
    """GetCascadeTrajectorySteps over the real TLS port (a StepSnapshot too)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.client = httpx.AsyncClient(verify=False, http2=True, timeout=5.0)

    async def call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        r = await self.client.post(
            self.base_url + SERVICE + method,
            json=body,
            headers={"Connect-Protocol-Version": "1"},
        )
        r.raise_for_status()
        data = r.json()
        assert isinstance(data, dict)
        return data

    async def read_steps(self, cascade_id: str) -> list[Any]:
        steps = (await self.call("GetCascadeTrajectorySteps", {"cascadeId": cascade_id})).get("steps", [])
        assert isinstance(steps, list)
        return steps

    async def user_inputs(self, cascade_id: str) -> list[str]:
        out = []
        for s in await self.read_steps(cascade_id):
            if s.get("type") == "CORTEX_STEP_TYPE_USER_INPUT":
                ui = s.get("userInput", {})
                out.append(ui.get("userResponse") or "".join(i.get("text", "") for i in ui.get("items", [])))
        return out

    async def wait_steps(
        self, cascade_id: str, predicate: Callable[[list[Any]], bool], timeout: float = 10.0
    ) -> list[Any]:
        deadline = time.monotonic() + timeout
        steps = await self.read_steps(cascade_id)
        while not predicate(steps):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"steps never matched: {[(s.get('type'), s.get('status')) for s in steps]}"
                )
            await asyncio.sleep(0.05)
            steps = await self.read_steps(cascade_id)
        return steps

    async def aclose(self) -> None:
        await self.client.aclose()


def footer(lines: Sequence[str]) -> str:
    rows = [row for row in lines if row.strip()]
    return rows[-1] if rows else ""


def is_idle(lines: Sequence[str]) -> bool:
    return footer(lines).endswith("· idle")


@pytest.fixture
def tmux_server() -> Iterator[libtmux.Server]:
    server = libtmux.Server(socket_name=f"agyh-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    pids: list[int] = []
    name = server.socket_name or ""
    socket_path = str(Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / name)
    try:
        yield server
    finally:
        with contextlib.suppress(Exception):
            for row in server.cmd("list-panes", "-a", "-F", "#{pane_pid}").stdout:
                if row.strip().isdigit():
                    pids.append(int(row))
        with contextlib.suppress(Exception):
            server.kill()
        if socket_path:  # tmux leaves its socket file behind
            with contextlib.suppress(OSError):
                os.unlink(socket_path)
        # SIGHUP reaches the pane processes; make sure they are gone before the next test.
        procs = []
        for pid in pids:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc = psutil.Process(pid)
                procs.extend([proc, *proc.children(recursive=True)])
        alive = _wait_gone(procs, 5.0)
        for proc in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)
        if alive:
            _wait_gone(alive, 5.0)
            raise AssertionError(f"processes outlived the tmux server: {[p.pid for p in alive]}")


def _gone(proc: psutil.Process) -> bool:
    # A zombie has exited; only its reaping (by init, once tmux is gone) is pending.
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    alive = [p for p in procs if not _gone(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [p for p in alive if not _gone(p)]
    return alive


async def start_tui(
    server: libtmux.Server, tmp_path: Path, *, profile: str = "1.0.10", pace: float | None = None
) -> TuiPane:
    port_file = tmp_path / f"port-{uuid.uuid4().hex[:6]}"
    pane_id, pid, port, cascade_id = await launch_tui(
        server,
        port_file,
        profile=profile,
        pace=pace,
        session_name=f"tui-{uuid.uuid4().hex[:6]}",
        start_timeout=15,
    )
    tui = TuiPane(server, pane_id, pid, port, cascade_id, port_file)
    await tui.wait_screen(is_idle)
    return tui


@pytest.fixture
async def tui(tmux_server: libtmux.Server, tmp_path: Path) -> TuiPane:
    return await start_tui(tmux_server, tmp_path)


@pytest.fixture
async def rpc(tui: TuiPane) -> AsyncIterator[HttpSteps]:
    steps = HttpSteps(tui.base_url)
    try:
        yield steps
    finally:
        await steps.aclose()
