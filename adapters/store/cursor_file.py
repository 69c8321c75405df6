"""Cursor stores (``ports.protocols.CursorStore``): a durable one-file-per-cascade store and an in-memory one.

:class:`FileCursorStore` keeps ``<directory>/<cascade_id>.json`` (the id sanitized to a safe file
name). A save writes a temp file in the same directory, fsyncs it, ``os.replace``-s it over the old
file and fsyncs the directory, so a crash leaves either the old cursor or the new one, never a torn
file. A load returns ``None`` for a missing cursor; a corrupt file is logged, moved aside to
``<name>.corrupt`` and also answered with ``None`` (the harness then starts from agy's history,
and the core's dedup keeps it from repeating what the cursor would have remembered).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from pathlib import Path

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from agy_harness.core.safejson import clean
from agy_harness.ports.protocols import Cursor

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def cursor_file_name(cascade_id: str) -> str:
    """A file name for ``cascade_id``: the id itself when safe, else a sanitized id plus a short hash."""
    safe = _UNSAFE.sub("_", cascade_id)[:100]
    if safe != cascade_id or not safe.strip(".") or safe.startswith("."):
        digest = hashlib.sha256(cascade_id.encode("utf-8")).hexdigest()[:12]
        safe = f"{safe.lstrip('.') or 'cascade'}-{digest}"
    return f"{safe}.json"


def encode_cursor(cursor: Cursor) -> bytes:
    """The cursor as UTF-8 JSON; never fails on its content (``safejson.clean``: a lone surrogate in
    the mapper state becomes U+FFFD, as the core does for everything it reads from agy)."""
    try:
        return cursor.model_dump_json().encode("utf-8")
    except (ValueError, PydanticSerializationError):
        return json.dumps(clean(cursor.model_dump()), ensure_ascii=False).encode("utf-8")


class FileCursorStore:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()

    def path_for(self, cascade_id: str) -> Path:
        return self.directory / cursor_file_name(cascade_id)

    def load(self, cascade_id: str) -> Cursor | None:
        path = self.path_for(cascade_id)
        with self._lock:
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                return None
            try:
                cursor = Cursor.model_validate_json(data)
            except (ValidationError, ValueError) as exc:
                aside = self._set_aside(path)
                log.error(
                    "cursor %s is corrupt (%s); moved it to %s and starting without a cursor",
                    path,
                    exc.__class__.__name__,
                    aside,
                )
                return None
            if cursor.cascade_id != cascade_id:
                log.error(
                    "cursor %s belongs to cascade %r, not %r; ignoring it",
                    path,
                    cursor.cascade_id,
                    cascade_id,
                )
                return None
            return cursor

    def save(self, cursor: Cursor) -> None:
        path = self.path_for(cursor.cascade_id)
        data = encode_cursor(cursor)
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
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


class MemoryCursorStore:
    """A CursorStore in a dict (tests): saves and loads deep copies."""

    def __init__(self) -> None:
        self._cursors: dict[str, Cursor] = {}
        self.saves = 0

    def load(self, cascade_id: str) -> Cursor | None:
        cursor = self._cursors.get(cascade_id)
        return cursor.model_copy(deep=True) if cursor is not None else None

    def save(self, cursor: Cursor) -> None:
        self.saves += 1
        self._cursors[cursor.cascade_id] = cursor.model_copy(deep=True)
