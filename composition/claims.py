"""Which conversations other sessions of this library are, or were, bound to: never a ``/clear`` of ours.

Every harness claims the cascade it is bound to (and the one it rotates to) with a small file in a
per-user directory. A claim outlives its session (a conversation that was owned elsewhere stays
somebody else's: a session can open, type and close between two directory checks of another); claims
older than :data:`RETENTION` are pruned. :meth:`ClaimRegistry.others` is what the rotation rule
excludes: a conversation another session of this library worked on, in this process or another,
is not our terminal's ``/clear``, however fresh its activity.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
import uuid
from pathlib import Path

log = logging.getLogger("agy_harness.claims")

RETENTION = 24 * 3600.0
PRUNE_EVERY = 60.0  # seconds between retention sweeps


def default_root() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(
        os.environ.get("AGY_HARNESS_CLAIMS_DIR")
        or Path(tempfile.gettempdir()) / f"agy-harness-{uid}" / "claims"
    )


class ClaimRegistry:
    """This harness's claims, and everybody else's (see module doc). Never raises on I/O."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else default_root()
        self.token = uuid.uuid4().hex
        # cost (issue #14): a claim file is written once and never changes, so each is read once;
        # the retention sweep (a stat per file) runs at most every PRUNE_EVERY seconds
        self._read: dict[str, tuple[str, str]] = {}  # file name -> (cascade_id, token)
        self._pruned = 0.0

    def _path(self, cascade_id: str) -> Path:
        digest = hashlib.sha256(cascade_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.root / f"{digest}.{self.token}.json"

    def claim(self, cascade_id: str) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            record = {"cascade_id": cascade_id, "pid": os.getpid(), "token": self.token}
            self._path(cascade_id).write_text(json.dumps(record), encoding="utf-8")
        except OSError as exc:
            log.warning("cannot record that this session is bound to %s: %s", cascade_id, exc)

    def others(self) -> set[str]:
        """Cascades another session of this library is or was bound to (within RETENTION)."""
        out: set[str] = set()
        try:
            names = [e.name for e in os.scandir(self.root) if e.name.endswith(".json")]
        except OSError:
            return out
        now = time.time()
        prune = now - self._pruned >= PRUNE_EVERY
        if prune:
            self._pruned = now
        for name in names:
            path = self.root / name
            try:
                if prune and now - path.stat().st_mtime > RETENTION:
                    path.unlink()
                    self._read.pop(name, None)
                    continue
                known = self._read.get(name)
                if known is None:
                    record = json.loads(path.read_text(encoding="utf-8"))
                    known = self._read[name] = (str(record["cascade_id"]), str(record["token"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
            cascade_id, token = known
            if token != self.token:
                out.add(cascade_id)
        return out
