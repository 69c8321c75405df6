"""The demo of an agy that takes turns only at its keyboard (``--profile 1.0.4``): its TUI in tmux.

agy before 1.0.10 has no RPC turn-send, so the harness types each turn into agy's terminal. The demo
runs the simulated agy TUI in a tmux server of its own (a private socket, killed at the end) and hands
its pane to the session, which picks tmux turn-send by itself. Without tmux it says what to install.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import last_resort
from .errors import UserFacingError

INSTALL_TMUX = (
    "the {profile} profile plays an agy that takes turns only at its keyboard, so the demo types them "
    "into its terminal through tmux, which is not installed. Install tmux (Debian/Ubuntu: "
    "`sudo apt-get install tmux`, macOS: `brew install tmux`, Fedora: `sudo dnf install tmux`) "
    "or run the demo on the full surface: `agy-harness demo --profile 1.0.10`"
)


class TmuxMissing(UserFacingError):
    """tmux is needed for this profile and is not on the PATH."""


@dataclass
class TuiInTmux:
    server: Any  # libtmux.Server
    socket_name: str
    pane_id: str
    pid: int
    port: int
    cascade_id: str


@contextlib.asynccontextmanager
async def tui_in_tmux(profile: str, pace: float, *, start_timeout: float = 30.0) -> AsyncIterator[TuiInTmux]:
    if shutil.which("tmux") is None:
        raise TmuxMissing(INSTALL_TMUX.format(profile=profile))
    import libtmux

    socket_name = f"agy-harness-demo-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    server = libtmux.Server(socket_name=socket_name)
    unregister = last_resort.register(server.kill)  # a hard stop still kills agy's TUI with its server
    with tempfile.TemporaryDirectory(prefix="agy-harness-demo-") as tmp:
        try:
            pane_id, pid, port, cascade_id = await start_tui(
                server, Path(tmp) / "port", profile=profile, pace=pace, start_timeout=start_timeout
            )
            yield TuiInTmux(server, socket_name, pane_id, pid, port, cascade_id)
        finally:
            unregister()
            with contextlib.suppress(Exception):
                server.kill()
            socket = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / socket_name
            with contextlib.suppress(OSError):
                socket.unlink()


async def start_tui(
    server: Any,
    port_file: Path,
    *,
    profile: str,
    pace: float | None = None,
    session_name: str = "agy",
    start_timeout: float = 30.0,
) -> tuple[str, int, int, str]:
    """Start the simulated agy TUI in a new session of ``server`` (a libtmux.Server); once it listens:
    ``(pane_id, pane pid, port, cascade_id)``. RuntimeError with the pane's screen if it never does."""
    argv = [sys.executable, "-m", "agy_harness.adapters.simulator.tui", "--profile", profile]
    argv += ["--port-file", str(port_file)] + (["--pace", str(pace)] if pace is not None else [])
    session = server.new_session(
        session_name=session_name, window_command=f"exec {shlex.join(argv)}", x=120, y=40, attach=False
    )
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    pid = int(server.cmd("display-message", "-p", "-t", pane.pane_id, "#{pane_pid}").stdout[0])
    loop = asyncio.get_running_loop()
    deadline = loop.time() + start_timeout
    while not (port_file.exists() and len(port_file.read_text().split()) == 2):
        if loop.time() > deadline:
            screen = "\n".join(server.cmd("capture-pane", "-p", "-t", pane.pane_id).stdout)
            raise RuntimeError(f"the simulated agy TUI did not start in tmux:\n{screen}")
        await asyncio.sleep(0.05)
    port_s, cascade_id = port_file.read_text().split()
    return pane.pane_id, pid, int(port_s), cascade_id
