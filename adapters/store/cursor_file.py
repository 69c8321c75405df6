"""Cursor stores (``ports.protocols.CursorStore``): a durable per-cascade file store and an in-memory one.

:class:`FileCursorStore` keeps, per cascade, a snapshot ``<directory>/<name>.json`` (the id
sanitized to a safe file name; ``{"cascade_id", "committed", "state", "generation"}``) and an
append-only journal ``<name>.<generation>.journal`` of the changes since that snapshot (one JSON
line each, see :mod:`.journal`). Its cost per delivery does not grow with the conversation:

* :meth:`FileCursorStore.record` (the ``CursorJournal`` port the emitter uses) appends one line
  holding only what changed: newly committed step keys, changed state fields, the new tail of a
  streamed reply. It is written with one ``write(2)`` before ``record`` returns.
* :meth:`FileCursorStore.sync` fsyncs the journal, and compacts it when it has grown past twice
  the snapshot (and 1 MB): a new snapshot of generation g+1 (temp file, fsync, ``os.replace``,
  directory fsync), then the journal of generation g is deleted. A crash in between leaves the new
  snapshot and no journal of its generation: nothing is replayed twice.
* :meth:`FileCursorStore.save` (the plain ``CursorStore`` port) writes a whole snapshot, as before.

**Durability rule.** A record that commits events (or changes any state besides streamed text) is
fsynced before the emitter takes the next batch from agy (the emitter calls ``sync`` at the end
of each batch and after each delivery outside one); within a batch, and for records that only
extend a streamed reply, the write reaches the OS at once and the fsync comes with the next
committed record. So a crash of the harness process loses and repeats nothing; a power loss can
at most lose the tail of a reply still streaming, which a restart re-sends from agy's steps.

Loading replays the journal over the snapshot (all read with ``core.safejson``: nothing in a
cursor file makes ``load`` raise). A torn last line (a crash mid-write) is dropped and cut off. A
journal record that cannot be applied stops the replay, the rest is moved to ``.corrupt``; a
corrupt snapshot (not JSON, a wrong shape, ``generation`` ``1e999``) goes to ``<name>.json.corrupt``
with its journals and reads as ``None``. Either way :meth:`FileCursorStore.damaged` says so once,
and the harness tells the consumer what the restart repeats. The directory is the user's (made
0700 if missing; refused if another user owns or may write to it: ``adapters/private_state.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agy_harness.adapters.private_state import private_dir
from agy_harness.core import safejson
from agy_harness.ports.protocols import Cursor

from . import journal
from .memory import MemoryCursorStore as MemoryCursorStore  # (re-exported: its home was here)

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
COMPACT_MIN = 1 << 20  # bytes of journal before a compaction is considered


def cursor_file_name(cascade_id: str) -> str:
    """A file name for ``cascade_id``: the id itself when safe, else a sanitized id plus a short hash."""
    safe = _UNSAFE.sub("_", cascade_id)[:100]
    if safe != cascade_id or not safe.strip(".") or safe.startswith("."):
        digest = hashlib.sha256(cascade_id.encode("utf-8")).hexdigest()[:12]
        safe = f"{safe.lstrip('.') or 'cascade'}-{digest}"
    return f"{safe}.json"


class _Corrupt(Exception):
    pass


#: what a damaged cursor file can raise while it is read (anything it holds, any type)
_DAMAGE = (ValidationError, ValueError, TypeError, AttributeError, OverflowError, RecursionError, KeyError)


def _generation(raw: Any) -> int:
    value = raw.get("generation") or 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 62:
        raise ValueError(f"generation {str(value)[:40]!r} is not a count")
    return value


@dataclass
class _Open:
    """What this process last wrote (or read) for one cascade: the baseline the next record diffs against."""

    generation: int
    committed: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    state: dict[str, Any] = field(default_factory=dict)  # without "committed"
    snapshot_bytes: int = 0
    journal_bytes: int = 0
    fd: int | None = None
    unsynced: bool = False  # bytes written since the last fsync
    must_sync: bool = False  # ... and some of them commit something
    new_file: bool = False  # the journal's directory entry is not fsynced yet
    embed: bool = True  # the state carries "committed" too (the mapper state does; a saved Cursor may not)


class FileCursorStore:
    def __init__(self, directory: Path, *, compact_min: int = COMPACT_MIN) -> None:
        self.directory = Path(directory)
        self.compact_min = compact_min
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}
        self._damaged: dict[str, str] = {}  # cascade -> what was set aside, until damaged() tells
        self._checked = False  # the directory was made/verified private
        self.compactions = 0

    def _directory(self) -> Path:
        if not self._checked:
            private_dir(self.directory, strict=False)
            self._checked = True
        return self.directory

    def path_for(self, cascade_id: str) -> Path:
        return self.directory / cursor_file_name(cascade_id)

    def journal_path(self, cascade_id: str, generation: int) -> Path:
        return self.directory / f"{cursor_file_name(cascade_id)[:-5]}.{generation}.journal"

    # -- CursorStore -----------------------------------------------------------------------

    def load(self, cascade_id: str) -> Cursor | None:
        with self._lock:
            self._directory()
            self._forget(cascade_id)
            opened = self._read(cascade_id)
            if opened is None:
                return None
            self._open[cascade_id] = opened
            return _cursor(cascade_id, opened)

    def save(self, cursor: Cursor) -> None:
        cascade_id = cursor.cascade_id
        with self._lock:
            old = self._open.pop(cascade_id, None)
            generation = old.generation + 1 if old is not None else self._snapshot_generation(cascade_id) + 1
            state = {k: v for k, v in cursor.state.items() if k != "committed"}
            committed = dict.fromkeys([*cursor.committed, *(cursor.state.get("committed") or ())])
            opened = _Open(generation, committed, state, embed="committed" in cursor.state)
            self._write_snapshot(cascade_id, opened)
            if old is not None and old.fd is not None:
                os.close(old.fd)
            self._remove_journals(cascade_id, keep=None)
            self._open[cascade_id] = opened

    # -- CursorJournal ---------------------------------------------------------------------

    def record(self, cascade_id: str, committed: Sequence[str], state: dict[str, Any]) -> bool:
        """Append what changed since the last record/load/save; True when a ``sync`` is due.

        ``committed``: the step keys committed since the last record (more is harmless);
        ``state``: the whole mapper state without ``committed``.
        """
        with self._lock:
            opened = self._open.get(cascade_id)
            if opened is None:
                opened = self._read(cascade_id) or _Open(self._snapshot_generation(cascade_id))
                self._open[cascade_id] = opened
            known = opened.committed
            added = [k for k in committed if k not in known]
            line, durable = journal.line(opened.state, state, added)
            if line:
                self._append(cascade_id, opened, line)
                if durable:
                    opened.must_sync = True
                for k in added:
                    known[k] = None
                opened.state = state
            return opened.must_sync or self._compaction_due(opened)

    def sync(self, cascade_id: str) -> None:
        """fsync what ``record`` wrote for ``cascade_id``; compact the journal when it is due."""
        with self._lock:
            opened = self._open.get(cascade_id)
            if opened is None:
                return
            if opened.fd is not None and opened.unsynced:
                os.fsync(opened.fd)
                if opened.new_file:
                    self._fsync_directory()
                    opened.new_file = False
            opened.unsynced = opened.must_sync = False
            if self._compaction_due(opened):
                self._compact(cascade_id, opened)

    def close(self) -> None:
        with self._lock:
            for cascade_id in list(self._open):
                self._forget(cascade_id)

    # -- CursorQuarantine ------------------------------------------------------------------

    def damaged(self, cascade_id: str) -> str | None:
        with self._lock:
            return self._damaged.pop(cascade_id, None)

    def quarantine(self, cascade_id: str, reason: str) -> str:
        """Move the cursor of ``cascade_id`` (and its journals) aside; where it went."""
        with self._lock:
            self._forget(cascade_id)
            aside = self._set_aside(self.path_for(cascade_id))
            for stale in self._journals(cascade_id):
                self._set_aside(stale)
            log.error("cursor %s cannot be used (%s); moved it to %s", cascade_id, reason, aside)
            return str(aside)

    # -- files -----------------------------------------------------------------------------

    def _compaction_due(self, opened: _Open) -> bool:
        return opened.journal_bytes > max(self.compact_min, 2 * opened.snapshot_bytes)

    def _compact(self, cascade_id: str, opened: _Open) -> None:
        old_generation, old_fd = opened.generation, opened.fd
        opened.generation += 1
        self._write_snapshot(cascade_id, opened)  # durable before the old journal goes
        if old_fd is not None:
            os.close(old_fd)
        opened.fd, opened.journal_bytes, opened.unsynced = None, 0, False
        with contextlib.suppress(OSError):
            os.unlink(self.journal_path(cascade_id, old_generation))
        self.compactions += 1

    def _append(self, cascade_id: str, opened: _Open, line: bytes) -> None:
        if opened.fd is None:
            self._directory()
            path = self.journal_path(cascade_id, opened.generation)
            opened.new_file = not path.exists()
            opened.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        view = memoryview(line)[os.write(opened.fd, line) :]
        while view:  # a short write (a signal, a full disk): the rest, or the error
            view = view[os.write(opened.fd, view) :]
        opened.journal_bytes += len(line)
        opened.unsynced = True

    def _write_snapshot(self, cascade_id: str, opened: _Open) -> None:
        committed = list(opened.committed)
        body = {
            "cascade_id": cascade_id,
            "committed": committed,
            "state": {**opened.state, "committed": committed} if opened.embed else opened.state,
            "generation": opened.generation,
        }
        data = journal.dumps(body)
        path = self.path_for(cascade_id)
        self._directory()
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._fsync_directory()
        opened.snapshot_bytes = len(data)

    def _snapshot_generation(self, cascade_id: str) -> int:
        try:
            data = safejson.loads(self.path_for(cascade_id).read_bytes())
            return _generation(data) if isinstance(data, dict) else 0
        except (OSError, *_DAMAGE):
            return 0

    def _read(self, cascade_id: str) -> _Open | None:
        """The snapshot plus its journal replayed, or None (nothing there, or corrupt: set aside)."""
        path = self.path_for(cascade_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = None
        opened = _Open(0)
        if data is not None:
            try:
                opened = self._parse_snapshot(cascade_id, path, data)
            except _Corrupt:
                return None
        journal_path = self.journal_path(cascade_id, opened.generation)
        try:
            lines = journal_path.read_bytes()
        except FileNotFoundError:
            return opened if data is not None else None
        self._replay(cascade_id, journal_path, lines, opened)
        return opened

    def _parse_snapshot(self, cascade_id: str, path: Path, data: bytes) -> _Open:
        try:
            raw = safejson.loads(data)  # (reads the ASCII escapes of any str, lone surrogates too)
            cursor = Cursor.model_validate(raw)
            generation = _generation(raw)
            embedded = cursor.state.get("committed") or []
            if not isinstance(embedded, list) or not all(isinstance(k, str) for k in embedded):
                raise TypeError("state.committed is not a list of step keys")
            committed = dict.fromkeys([*cursor.committed, *embedded])
        except _DAMAGE as exc:
            aside = self._set_aside(path)
            for stale in self._journals(cascade_id):
                self._set_aside(stale)
            log.error(
                "cursor %s is corrupt (%s: %s); moved it to %s and starting without a cursor",
                path,
                exc.__class__.__name__,
                str(exc)[:200],
                aside,
            )
            self._damaged[cascade_id] = f"{exc.__class__.__name__}; moved aside to {aside}"
            raise _Corrupt from exc
        if cursor.cascade_id != cascade_id:
            log.error(
                "cursor %s belongs to cascade %r, not %r; ignoring it", path, cursor.cascade_id, cascade_id
            )
            raise _Corrupt
        state = {k: v for k, v in cursor.state.items() if k != "committed"}
        return _Open(
            generation, committed, state, snapshot_bytes=len(data), embed="committed" in cursor.state
        )

    def _replay(self, cascade_id: str, path: Path, data: bytes, opened: _Open) -> None:
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                log.info("cursor journal %s: dropping a torn last line (%d bytes)", path, len(line))
                break
            try:
                rec = safejson.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
                journal.apply(opened.committed, opened.state, rec)
            except _DAMAGE as exc:
                aside = path.with_name(path.name + ".corrupt")
                with contextlib.suppress(OSError), open(aside, "wb") as fh:
                    fh.write(data[good:])  # the unread rest, kept for a human
                log.error("cursor journal %s: unreadable record at byte %d (%s: %s); replay stops "
                          "there, the rest moved to %s", path, good, type(exc).__name__, exc, aside)  # fmt: skip
                self._damaged[cascade_id] = (
                    f"its journal was cut at an unreadable record; moved aside to {aside}"
                )
                break
            good += len(line)
        if good != len(data):
            with open(path, "r+b") as fh:
                fh.truncate(good)
        opened.journal_bytes = good

    def _journals(self, cascade_id: str) -> list[Path]:
        stem = cursor_file_name(cascade_id)[:-5]
        if not self.directory.is_dir():
            return []
        return [
            p for p in self.directory.iterdir() if p.name.startswith(stem + ".") and p.suffix == ".journal"
        ]

    def _remove_journals(self, cascade_id: str, keep: Path | None) -> None:
        for p in self._journals(cascade_id):
            if p != keep:
                with contextlib.suppress(OSError):
                    os.unlink(p)

    def _forget(self, cascade_id: str) -> None:
        opened = self._open.pop(cascade_id, None)
        if opened is not None and opened.fd is not None:
            if opened.unsynced:
                with contextlib.suppress(OSError):
                    os.fsync(opened.fd)
            os.close(opened.fd)

    def _fsync_directory(self) -> None:
        try:
            dfd = os.open(self.directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)

    @staticmethod
    def _set_aside(path: Path) -> Path:
        aside = path.with_name(path.name + ".corrupt")
        try:
            os.replace(path, aside)
        except OSError as exc:
            log.warning("cannot move the corrupt cursor %s aside: %s", path, exc)
            return path
        return aside


def _cursor(cascade_id: str, opened: _Open) -> Cursor:
    committed = list(opened.committed)
    state = {**opened.state, "committed": committed} if opened.embed else dict(opened.state)
    return Cursor(cascade_id=cascade_id, committed=committed, state=state)
