"""``--start-agy``: start agy for the editor when none runs, in a tmux session the user can attach to.

An editor may start ``agy-harness acp`` before the user opened agy. With ``--start-agy`` the first
session that finds no agy runs the agy command (``--agy-command``, default ``agy``) in a new tmux
session (``--agy-session``, default ``agy``; ``tmux attach -t agy`` shows it) in the directory the
client gave for that session, waits until its language server answers, and from then on binds that
agy only (discovery looks under that tmux pane's process; the pane is also agy's terminal for the
harness). The agy started stays when the editor goes: it is the user's agy, in the user's tmux.
That is the user's default tmux server (``tmux attach -t agy`` from any terminal), named by its socket,
never the server of a ``TMUX`` the editor inherited from the window it was started in.

Nothing is started when tmux is missing or the command cannot start; the client gets the "no agy"
error, saying why.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import shutil
from dataclasses import dataclass
from typing import Any

from agy_harness.ports.errors import AgyAmbiguous, AgyNotFound

from ...root.container import bind_endpoint, default_tmux_server
from . import errors
from .binding import AgyTarget, close_client

log = logging.getLogger("agy_harness.acp.launcher")


@dataclass
class AgyLauncher:
    command: str = "agy"
    session_name: str = "agy"
    start_timeout: float = 60.0

    def __post_init__(self) -> None:
        self._lock = asyncio.Lock()

    async def ensure(self, target: AgyTarget, cwd: str | None) -> None:
        """Start agy in tmux for ``target`` unless an agy it started answers already."""
        async with self._lock:
            if target.pane_pid is not None and await self._answers(target):
                return
            if shutil.which("tmux") is None:
                raise errors.no_agy("tmux is not installed", hint="(--start-agy needs tmux.)")
            argv = shlex.split(self.command)
            if not argv or shutil.which(argv[0]) is None:
                raise errors.no_agy(
                    f"{self.command!r} is not a command here",
                    hint=f"(--agy-command {self.command!r} was not found.)",
                )
            directory = cwd if cwd and os.path.isdir(cwd) else os.getcwd()
            server, pane, pid = await asyncio.to_thread(self._start, directory)
            target.pane_pid, target.tmux_target, target.tmux_server = pid, pane, server
            target.workspace = directory
            log.info(
                "started %r in tmux session %r (pane %s) in %s",
                self.command,
                self.session_name,
                pane,
                directory,
            )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.start_timeout
            while not await self._answers(target):
                if loop.time() > deadline:
                    raise errors.no_agy(
                        f"{self.command!r} did not serve its language server within {self.start_timeout:.0f} s",
                        hint=f"(it was started in tmux: `tmux attach -t {self.session_name}` shows why.)",
                    )
                await asyncio.sleep(0.2)

    def _start(self, directory: str) -> tuple[Any, str, int]:
        server = default_tmux_server()
        name = self.session_name
        if server.has_session(name):
            name = f"{name}-{os.getpid()}"
        session = server.new_session(
            session_name=name,
            start_directory=directory,
            window_command=f"exec {self.command}",
            attach=False,
            x=160,
            y=48,
        )
        pane = session.active_window.active_pane
        assert pane is not None and pane.pane_id is not None
        pid = int(server.cmd("display-message", "-p", "-t", pane.pane_id, "#{pane_pid}").stdout[0])
        self.session_name = name
        return server, pane.pane_id, pid

    @staticmethod
    async def _answers(target: AgyTarget) -> bool:
        container = target.container(None)
        try:
            await bind_endpoint(container)
        except (AgyNotFound, AgyAmbiguous):
            return False
        finally:
            await close_client(container)
        return True
