"""tmux plumbing: run a command, map its failure to a typed error, load a buffer with exact bytes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from typing import Any

import libtmux

from .errors import PaneNotFound, TmuxCommandFailed


def _check(target: str, command: str, result: Any) -> list[str]:
    stderr = "\n".join(str(s) for s in (result.stderr or []))
    if result.returncode != 0 or stderr:
        lowered = stderr.lower()
        if (
            "can't find" in lowered
            or "no server running" in lowered
            or "error connecting" in lowered
            or "no such file" in lowered
        ):
            raise PaneNotFound(target, stderr)
        raise TmuxCommandFailed(command, stderr)
    return [str(s) for s in result.stdout]


def default_server() -> libtmux.Server:
    """The user's default tmux server, the one ``tmux attach`` reaches from a plain terminal
    (``$TMUX_TMPDIR`` or ``/tmp``, ``tmux-UID/default``), named explicitly (``tmux -L default``).

    ``libtmux.Server()`` runs ``tmux`` without ``-S``/``-L``, and tmux then follows an inherited
    ``TMUX``: a process started from a tmux window (an editor, and the ``agy-harness acp`` it starts)
    would create its sessions in whichever server that window belongs to, where ``tmux attach -t NAME``
    from another terminal does not find them, and then send keys to a pane id of that server.
    """
    return libtmux.Server(socket_name="default")


def find_pane_pid(target: str, server: libtmux.Server | None = None) -> int:
    """The pid of the process running in the pane (its shell or agy): scope port discovery with it."""
    srv = server if server is not None else libtmux.Server()
    out = _check(target, "display-message", srv.cmd("display-message", "-p", "-t", target, "#{pane_pid}"))
    try:
        return int(out[0].strip())
    except (IndexError, ValueError):
        raise TmuxCommandFailed("display-message", f"no pane_pid in {out!r}") from None


async def load_buffer(server: libtmux.Server, target: str, name: str, text: str) -> None:
    """Put exactly ``text`` into tmux buffer ``name``.

    From a private temp file (``load-buffer FILE``), never as a command argument: tmux's command
    parser eats a trailing ``;`` of an argument (``set-buffer -- "ls;"`` stores ``ls``, ``";"`` alone
    is an error) and limits a command's length, so argv chunks lose text at their ends. The file is
    unlinked as soon as tmux has read it.
    """
    data = text.encode("utf-8")  # the caller checked: no lone surrogates
    fd, path = tempfile.mkstemp(prefix="agy-harness-turn-", suffix=".txt")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        result = await asyncio.to_thread(server.cmd, "load-buffer", "-b", name, path)
        _check(target, "load-buffer", result)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
