"""The client's ``cwd`` of each ACP session ``agy-harness acp`` made, kept across restarts (so that
``session/list {cwd}`` finds them under the path the editor used): one JSON object (session id ->
path) in ``<durable root>/acp/acp-session-cwds.json`` (``$XDG_STATE_HOME/agy-harness``: it must outlive
a logout, a reboot and a cache clean-up, as agy's conversations do), a 0600 file in a 0700 directory
(:mod:`agy_harness.adapters.private_state`), replaced whole (written to a temporary name, then
renamed); at most :data:`CWDS_KEEP` sessions, :data:`CWDS_LIMIT` bytes read. Unreadable or not JSON:
empty, with a log line (a listing then falls back to agy's own workspace folders). Earlier versions
kept the file under the run-time root (``$XDG_RUNTIME_DIR``, else the cache): while the durable file
does not exist yet, it is read from there, and the first session remembered writes it in its place."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from agy_harness.adapters.private_state import (
    create_file,
    durable_root,
    open_dir,
    read_own_file,
    transient_roots,
)

log = logging.getLogger("agy_harness.store.session_cwds")

CWDS_FILE = "acp-session-cwds.json"
CWDS_LIMIT = 4 * 1024 * 1024  # bytes read at most
CWDS_KEEP = 5000  # sessions remembered (the oldest are forgotten first)


class SessionCwds:
    """session id -> the client's cwd, for the sessions this agent made (see the module doc)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or durable_root() / "acp"
        #: where earlier versions kept the file (read while the durable one does not exist)
        self.earlier = [] if directory else [root / "acp" for root in transient_roots()]

    def all(self) -> dict[str, str]:
        try:
            with open_dir(self.directory) as fd:
                data = read_own_file(CWDS_FILE, dir_fd=fd, limit=CWDS_LIMIT)
                if data is None and not _exists(fd):
                    data = self._earlier()
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

    def _earlier(self) -> bytes | None:
        """The file where an earlier version kept it (never created here: only an existing one is read)."""
        for directory in self.earlier:
            if not directory.is_dir():
                continue
            try:
                with open_dir(directory) as fd:
                    data = read_own_file(CWDS_FILE, dir_fd=fd, limit=CWDS_LIMIT)
            except OSError as exc:
                log.warning("the sessions' directories kept in %s are not readable (%s)", directory, exc)
                continue
            if data is not None:
                return data
        return None


def _exists(dir_fd: int) -> bool:
    try:
        os.stat(CWDS_FILE, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


__all__ = ["SessionCwds"]
