"""The simulator's transcript writer: what agy appends to ``transcript.jsonl`` (``current=True``, agy
>= 1.2.4, lines in :mod:`agy_harness.adapters.transcript.modern`) or, by default, to the legacy
``transcript_full.jsonl``.

:class:`TranscriptWriter` subscribes to a simulator's step changes and appends one line (format in
:mod:`agy_harness.adapters.transcript.format`) per step when it completes (DONE/ERROR; a USER_INPUT
as soon as it is seen), never twice for the same step, to
``<root>/brain/<cascadeId>/.system_generated/logs/transcript_full.jsonl``.

Writes are open-append + flush. With ``split_writes=True`` each line goes out in two chunks with a
short pause between them (split inside a multi-byte UTF-8 character when the line has one), from a
writer thread, so that readers see partial lines; :meth:`TranscriptWriter.drain` waits for it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from agy_harness.adapters.transcript import modern
from agy_harness.adapters.transcript.format import (
    encode_line,
    is_completed,
    step_identity,
    step_to_line,
    transcript_path,
)
from agy_harness.adapters.transcript.locate import logs_dir

__all__ = ["TranscriptWriter", "split_point", "step_to_line"]

log = logging.getLogger(__name__)


class _Subscribable(Protocol):
    def subscribe(self, cb: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]: ...


def split_point(data: bytes) -> int:
    """Where to cut ``data`` in two: inside the first multi-byte UTF-8 character, else the middle."""
    for i, byte in enumerate(data):
        if byte >= 0xC0 and i + 1 < len(data):  # a lead byte: cut right after it
            return i + 1
    return max(1, len(data) // 2)


class TranscriptWriter:
    def __init__(
        self, root: Path, *, split_writes: bool = False, split_pause: float = 0.02, current: bool = False
    ) -> None:
        self.root = Path(root)
        self.current = current
        self.split_writes = split_writes
        self.split_pause = split_pause
        self._written: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._unsubscribe: list[Callable[[], None]] = []
        self._queue: queue.Queue[tuple[Path, bytes] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.lines_written = 0

    def path_for(self, cascade_id: str) -> Path:
        if self.current:
            return logs_dir(self.root, cascade_id) / modern.TRANSCRIPT_NAME
        return transcript_path(self.root, cascade_id)

    def compact(self, cascade_id: str, *, keep: int = 40) -> None:
        """agy's context compaction (CHANGELOG 1.1.13): the file is rewritten in place, each long
        ``content``/``thinking`` cut to ``keep`` characters with a ``<truncated N bytes>`` marker."""
        path = self.path_for(cascade_id)
        with self._lock:
            lines = [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
            out = bytearray()
            for line in lines:
                for name in ("content", "thinking"):
                    line = modern.truncate(line, name, keep)
                out += encode_line(line)
            with open(path, "r+b") as fh:  # in place: same inode, truncated then rewritten
                fh.truncate(0)
                fh.write(out)
                fh.flush()

    def attach(self, sim: _Subscribable) -> Callable[[], None]:
        """Follow ``sim``'s step changes; returns the unsubscribe callable."""
        unsubscribe = sim.subscribe(self.on_step)
        self._unsubscribe.append(unsubscribe)
        return unsubscribe

    def on_step(self, cascade_id: str, step: dict[str, Any]) -> None:
        """The simulator's callback: write ``step`` if it just completed and was not written yet."""
        if not isinstance(step, dict) or not is_completed(step):
            return
        key = (cascade_id, step_identity(step))
        line = modern.step_to_line(step) if self.current else step_to_line(step)
        if line is None:
            return
        with self._lock:
            if key in self._written:
                return
            self._written.add(key)
        self._emit(self.path_for(cascade_id), encode_line(line))

    def _emit(self, path: Path, data: bytes) -> None:
        if not self.split_writes:
            with self._lock:
                self._append(path, data)
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="transcript-writer", daemon=True)
            self._thread.start()
        self._queue.put((path, data))

    def _append(self, path: Path, *chunks: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as fh:
            for i, chunk in enumerate(chunks):
                if i:
                    time.sleep(self.split_pause)
                fh.write(chunk)
                fh.flush()
        self.lines_written += 1

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                path, data = item
                cut = split_point(data)
                try:
                    self._append(path, data[:cut], data[cut:])
                except OSError:
                    log.exception("transcript writer: cannot append to %s", path)
            finally:
                self._queue.task_done()

    def drain(self) -> None:
        """Block until every queued split write is on disk."""
        if self._thread is not None:
            self._queue.join()

    def close(self) -> None:
        """Unsubscribe, finish the queued writes and stop the writer thread."""
        for unsubscribe in self._unsubscribe:
            with contextlib.suppress(Exception):
                unsubscribe()
        self._unsubscribe.clear()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
