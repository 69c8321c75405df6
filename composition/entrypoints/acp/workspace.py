"""The editor's project is the session's project: where agy works, told against ``session/new``'s ``cwd``.

agy works in one directory, the one it was started in; an ACP client's ``cwd`` cannot move it. So a
``session/new`` is served only where agy's workspace *is* the client's ``cwd`` (the same directory,
symlinks resolved), and refused otherwise (:func:`.errors.other_workspace`), never silently run
elsewhere. agy's workspace, first found of:

1. the directory the agent itself started agy in (``--start-agy``) or the embedded simulator's;
2. the working directory of the agy process discovery bound (``/proc/PID/cwd``);
3. the workspace folder agy reports for its newest conversation (``workspaceFolderAbsoluteUri``).

When none is known (an agy at ``--port`` with no conversation yet), the session is served and the
editor is shown a notice saying so (:func:`unknown_workspace_notice`).

:class:`SessionCwds` keeps the client's ``cwd`` of every session this agent made, in the private
state directory (0600 file in a 0700 directory), so that ``session/list {cwd}`` finds them, also
after an editor restart, under the path the editor used.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from agy_harness.adapters.private_state import create_file, open_dir, read_own_file, state_root

from ...root.container import AgyContainer
from .listing import path_of, process_cwd

log = logging.getLogger("agy_harness.acp.workspace")

CWDS_FILE = "acp-session-cwds.json"
CWDS_LIMIT = 4 * 1024 * 1024  # bytes read at most
CWDS_KEEP = 5000  # sessions remembered (the oldest are forgotten first)


def same_dir(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


async def agy_workspace(container: AgyContainer, known: str | None) -> str | None:
    """agy's workspace for a session bound through ``container`` (the module doc's order)."""
    if known:
        return known
    binding = container.discovery().binding if container.config.port() is None else None
    found = process_cwd(binding.pid if binding is not None else None)
    if found:
        return found
    try:
        summaries = await container.directory().list_cascades()
    except Exception as exc:
        log.warning("agy did not list its conversations (%s): its workspace is unknown", exc)
        return None
    for summary in sorted(summaries, key=lambda s: s.last_modified_time, reverse=True):
        for uri in summary.workspace_uris:
            path = path_of(uri)
            if path:
                return path
    return None


def unknown_workspace_notice(cwd: str) -> str:
    return (
        f"agy-harness could not tell which directory this agy works in (it runs at a port given, and "
        f"has no conversation yet): agy works in the directory it was started in, which may not be "
        f"{cwd}."
    )


class SessionCwds:
    """session id -> the client's cwd, for the sessions this agent made (see the module doc)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or state_root() / "acp"

    def all(self) -> dict[str, str]:
        try:
            with open_dir(self.directory) as fd:
                data = read_own_file(CWDS_FILE, dir_fd=fd, limit=CWDS_LIMIT)
        except OSError as exc:
            log.warning("the sessions' directories are not readable (%s)", exc)
            return {}
        if not data:
            return {}
        try:
            loaded: Any = json.loads(data)
        except ValueError:
            log.warning("%s is not JSON: ignored", self.directory / CWDS_FILE)
            return {}
        if not isinstance(loaded, dict):
            return {}
        return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, str)}

    def remember(self, session_id: str, cwd: str) -> None:
        cwds = self.all()
        cwds.pop(session_id, None)
        cwds[session_id] = cwd
        kept = dict(list(cwds.items())[-CWDS_KEEP:])
        data = json.dumps(kept).encode()
        temp = f".{CWDS_FILE}.{os.getpid()}"
        try:
            with open_dir(self.directory) as fd:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=fd)
                create_file(temp, data, dir_fd=fd)
                os.replace(temp, CWDS_FILE, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            log.warning("session %s: its directory was not kept (%s)", session_id, exc)


__all__ = ["SessionCwds", "agy_workspace", "same_dir", "unknown_workspace_notice"]
