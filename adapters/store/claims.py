"""Which conversations other sessions of this library are, or were, bound to: never a ``/clear`` of ours.

Every harness claims the cascade it is bound to (and the one it rotates to) with a small file in a
per-user private directory (``claims`` under :func:`~agy_harness.adapters.private_state.state_root`,
or ``AGY_HARNESS_CLAIMS_DIR``; created 0700 and verified: owned by the user, closed to others, not a
symlink). A claim outlives its session (a conversation that was owned elsewhere stays somebody
else's: a session can open, type and close between two directory checks of another); claims older
than :data:`RETENTION` are pruned -- only files this library names and writes (``<hash>.<token>.json``,
regular, the user's own), never anything else found there. :meth:`ClaimRegistry.others` is what the
rotation rule excludes: a conversation another session of this library worked on, in this process
or another, is not our terminal's ``/clear``, however fresh its activity.

An unsafe location is refused: :meth:`~ClaimRegistry.claim` logs why (``problem``) and
:meth:`~ClaimRegistry.others` raises :class:`UnsafeStateError`, so the rotation rule, which cannot
know the other sessions' claims, follows no ``/clear`` (the directory watcher says so in a notice).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import time
import uuid
from pathlib import Path

from agy_harness.adapters.private_state import (
    UnsafeStateError,
    create_file,
    open_dir,
    read_own_file,
    state_root,
)
from agy_harness.core import safejson

log = logging.getLogger("agy_harness.claims")

RETENTION = 24 * 3600.0
PRUNE_EVERY = 60.0  # seconds between retention sweeps
CLAIM_BYTES = 4096  # a claim is ~150 bytes; anything larger in the directory is not one of ours
_NAME = re.compile(r"[0-9a-f]{32}\.[0-9a-f]{32}\.json")

__all__ = ["ClaimRegistry", "UnsafeStateError", "default_root"]


def default_root() -> Path:
    override = os.environ.get("AGY_HARNESS_CLAIMS_DIR")
    return Path(override) if override else state_root() / "claims"


class ClaimRegistry:
    """This harness's claims, and everybody else's (see module doc)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else default_root()
        self.token = uuid.uuid4().hex
        # cost (issue #14): a claim file is written once and never changes, so each is read once;
        # the retention sweep (a stat per file) runs at most every PRUNE_EVERY seconds
        self._read: dict[str, tuple[str, str]] = {}  # file name -> (cascade_id, token)
        self._pruned = 0.0
        self.problem: str | None = None  # why the location was refused, when it was

    def _name(self, cascade_id: str) -> str:
        digest = hashlib.sha256(cascade_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"{digest}.{self.token}.json"

    def claim(self, cascade_id: str) -> None:
        """Record that this session is bound to ``cascade_id``. Never raises: an unsafe location is
        logged and kept in ``problem``; other I/O errors are logged."""
        record = {"cascade_id": cascade_id, "pid": os.getpid(), "token": self.token}
        data = json.dumps(record).encode("utf-8", "surrogatepass")
        try:
            # (FileExistsError: claimed before; a re-claim is a no-op)
            with open_dir(self.root) as dir_fd, contextlib.suppress(FileExistsError):
                create_file(self._name(cascade_id), data, dir_fd=dir_fd)
        except UnsafeStateError as exc:
            self.problem = str(exc)
            log.error("not recording this session's conversation: %s", exc)
        except OSError as exc:
            log.warning("cannot record that this session is bound to %s: %s", cascade_id, exc)

    def others(self) -> set[str]:
        """Cascades another session of this library is or was bound to (within RETENTION).

        Raises UnsafeStateError when the location is unsafe (nothing read there can be trusted)."""
        out: set[str] = set()
        try:
            with open_dir(self.root) as dir_fd:
                self.problem = None
                self._scan(dir_fd, out)
        except UnsafeStateError as exc:
            self.problem = str(exc)
            raise
        except OSError:
            pass  # nothing claimed yet (no directory)
        return out

    def _scan(self, dir_fd: int, out: set[str]) -> None:
        names = [n for n in os.listdir(dir_fd) if _NAME.fullmatch(n)]
        now = time.time()
        prune = now - self._pruned >= PRUNE_EVERY
        if prune:
            self._pruned = now
        for name in names:
            try:
                if prune and self._expired(name, dir_fd, now):
                    os.unlink(name, dir_fd=dir_fd)
                    self._read.pop(name, None)
                    continue
                known = self._read.get(name)
                if known is None:
                    raw = read_own_file(name, dir_fd=dir_fd, limit=CLAIM_BYTES)
                    if raw is None:
                        continue
                    record = safejson.loads(raw)
                    known = self._read[name] = (str(record["cascade_id"]), str(record["token"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
            cascade_id, token = known
            if token != self.token:
                out.add(cascade_id)

    @staticmethod
    def _expired(name: str, dir_fd: int, now: float) -> bool:
        """One of our claim files (a regular file of the user's, named as we name them), old enough."""
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        mine = stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()
        return mine and now - info.st_mtime > RETENTION
