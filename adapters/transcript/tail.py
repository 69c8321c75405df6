"""A step source that follows agy's legacy ``transcript_full.jsonl`` (see :mod:`.format` for the lines).

:class:`TranscriptTailSource` waits for the transcript of a cascade to appear, then follows it:
``watchfiles.awatch`` on the transcript's directory wakes it up when available (with a slow safety-net
re-check), else it polls ``stat`` every ``poll_interval`` seconds. The file reading itself lives in
:class:`TranscriptFollower`, a synchronous reader that is robust to:

- a partial last line: the bytes after the last newline are kept until their newline arrives;
- a UTF-8 character split across reads: bytes are decoded only once a whole line is in;
- truncation (size below the read offset, or the first bytes rewritten) and replacement (a new
  inode at the path): the file is read again from the start as a new *generation* (after draining
  what the replaced file still held). No line is emitted twice within one generation; dedup across
  generations is the core's job (it never commits a step twice);
- malformed lines (bad UTF-8, bad JSON, not a step): logged with ``file:line`` and skipped.

Undetectable by design: a file truncated and rewritten between two reads with the same first bytes
and at least the old length (use replacement for rotation).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agy_harness.ports.protocols import StepBatch

from .format import line_to_step, transcript_path

log = logging.getLogger(__name__)

_PREFIX_BYTES = 256
_READ_SIZE = 1 << 16


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What one :meth:`TranscriptFollower.poll` found: steps, and whether they start a new generation."""

    steps: tuple[dict[str, Any], ...]
    snapshot: bool


@dataclass(slots=True)
class _Generation:
    fd: int
    ident: tuple[int, int]
    offset: int = 0
    buffer: bytearray = field(default_factory=bytearray)
    lineno: int = 0
    prefix: bytes = b""
    seen: set[bytes] = field(default_factory=set)


class TranscriptFollower:
    """Reads the complete lines appended to one transcript file since the last :meth:`poll`."""

    def __init__(self, path: Path, *, cascade_id: str = "", read_size: int = _READ_SIZE) -> None:
        self.path = path
        self.cascade_id = cascade_id
        self._read_size = read_size
        self._gen: _Generation | None = None
        self.generations = 0
        self.malformed = 0

    # -- public ----------------------------------------------------------------------------

    def poll(self) -> list[ReadResult]:
        """Read what is new. Empty when the file does not exist (yet) or nothing changed.

        A result with ``snapshot=True`` starts a new generation (first open, truncation,
        replacement); it is returned even when it holds no step.
        """
        out: list[ReadResult] = []
        try:
            st: os.stat_result | None = os.stat(self.path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            log.warning("transcript %s: cannot stat: %s", self.path, exc)
            st = None
        gen = self._gen
        if gen is None:
            if st is None:
                return out
            if not self._open():
                return out
            gen = self._gen
            assert gen is not None
            out.append(ReadResult(tuple(self._read(gen)), snapshot=True))
            return out
        if st is not None and (st.st_dev, st.st_ino) != gen.ident:
            drained = self._read(gen, final=True)
            if drained:
                out.append(ReadResult(tuple(drained), snapshot=False))
            log.info("transcript %s: the file was replaced; reading the new one from the start", self.path)
            self._close()
            if self._open():
                gen = self._gen
                assert gen is not None
                out.append(ReadResult(tuple(self._read(gen)), snapshot=True))
            return out
        if self._truncated(gen):
            log.info("transcript %s: the file was truncated; reading it again from the start", self.path)
            self._restart(gen)
            out.append(ReadResult(tuple(self._read(gen)), snapshot=True))
            return out
        steps = self._read(gen)
        if steps:
            out.append(ReadResult(tuple(steps), snapshot=False))
        return out

    def close(self) -> None:
        self._close()

    # -- internals -------------------------------------------------------------------------

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError as exc:
            log.warning("transcript %s: cannot open: %s", self.path, exc)
            return False
        st = os.fstat(fd)
        self._gen = _Generation(fd=fd, ident=(st.st_dev, st.st_ino))
        self.generations += 1
        return True

    def _close(self) -> None:
        if self._gen is not None:
            with contextlib.suppress(OSError):
                os.close(self._gen.fd)
            self._gen = None

    def _restart(self, gen: _Generation) -> None:
        gen.offset = 0
        gen.buffer.clear()
        gen.lineno = 0
        gen.prefix = b""
        gen.seen.clear()
        self.generations += 1

    def _truncated(self, gen: _Generation) -> bool:
        try:
            size = os.fstat(gen.fd).st_size
            if size < gen.offset:
                return True
            if gen.prefix:
                return os.pread(gen.fd, len(gen.prefix), 0) != gen.prefix
        except OSError as exc:
            log.warning("transcript %s: cannot check the file: %s", self.path, exc)
        return False

    def _read(self, gen: _Generation, *, final: bool = False) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        while True:
            try:
                chunk = os.pread(gen.fd, self._read_size, gen.offset)
            except OSError as exc:
                log.warning("transcript %s: read failed: %s", self.path, exc)
                break
            if not chunk:
                break
            if len(gen.prefix) < _PREFIX_BYTES and gen.offset < _PREFIX_BYTES:
                gen.prefix += chunk[: _PREFIX_BYTES - gen.offset]
            gen.offset += len(chunk)
            gen.buffer += chunk
            self._split(gen, steps)
        if final and gen.buffer:
            rest = bytes(gen.buffer)
            gen.buffer.clear()
            gen.lineno += 1
            self._line(gen, rest, steps, partial=True)
        return steps

    def _split(self, gen: _Generation, steps: list[dict[str, Any]]) -> None:
        buffer = gen.buffer
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            raw = bytes(buffer[start:end])
            start = end + 1
            gen.lineno += 1
            self._line(gen, raw, steps)
        if start:
            del buffer[:start]

    def _line(self, gen: _Generation, raw: bytes, steps: list[dict[str, Any]], partial: bool = False) -> None:
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            return
        where = f"{self.path}:{gen.lineno}"
        digest = hashlib.blake2b(raw, digest_size=16).digest()
        if digest in gen.seen:
            log.debug("%s: skipping a repeated line", where)
            return
        gen.seen.add(digest)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._malformed(where, f"not UTF-8 ({exc.reason} at byte {exc.start})")
            return
        try:
            obj = json.loads(text)
        except ValueError as exc:
            why = "an unterminated last line" if partial else "not JSON"
            self._malformed(where, f"{why} ({exc})")
            return
        step = line_to_step(obj, cascade_id=self.cascade_id)
        if step is None:
            self._malformed(where, "not a transcript step (needs an object with type and trajectory_id)")
            return
        steps.append(step)

    def _malformed(self, where: str, why: str) -> None:
        self.malformed += 1
        log.warning("%s: skipping a malformed transcript line: %s", where, why)


class _Waker:
    """Wakes the tail when the transcript may have changed: watchfiles, or a poll timer.

    With watchfiles, it watches (non-recursively) the deepest existing directory on the way to the
    transcript, below ``stop_at``, and moves down as the directories appear; a watcher's first yield
    (it is in place) triggers one re-read, so nothing written while it was starting is missed.
    """

    def __init__(self, path: Path, *, stop_at: Path, poll_interval: float, use_watchfiles: bool) -> None:
        self.path = path
        self.stop_at = stop_at
        self.poll_interval = poll_interval
        self.safety_interval = max(2.0, poll_interval * 8)
        self._use_watch = use_watchfiles and _watchfiles_available()
        self._event = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watched: Path | None = None
        self._ready = False
        self.watch_wakeups = 0

    @property
    def watching(self) -> bool:
        return self._task is not None and not self._task.done() and self._ready

    async def wait(self) -> None:
        await self._retarget()
        timeout = self.safety_interval if self.watching else self.poll_interval
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
        self._event.clear()

    def _target(self) -> Path | None:
        directory = self.path.parent
        while True:
            if directory.is_dir():
                return directory
            if directory == self.stop_at or directory.parent == directory:
                return None
            directory = directory.parent

    async def _retarget(self) -> None:
        if not self._use_watch:
            return
        target = self._target()
        running = self._task is not None and not self._task.done()
        if running and target == self._watched:
            return
        await self._stop_watch()
        if target is None:
            return
        self._watched = target
        self._stop = asyncio.Event()
        child = self.path.relative_to(target).parts[0]
        self._task = asyncio.create_task(self._watch(target, child), name=f"transcript-watch:{target}")

    async def _watch(self, directory: Path, child: str) -> None:
        import watchfiles

        try:
            async for changes in watchfiles.awatch(
                directory,
                watch_filter=None,
                stop_event=self._stop,
                recursive=False,
                debounce=200,
                step=20,
                rust_timeout=max(20, min(200, int(self.poll_interval * 1000))),
                yield_on_timeout=True,
            ):
                if not self._ready:  # the first yield: the watcher is in place; re-read once
                    self._ready = True
                    self._event.set()
                if any(Path(p).name == child for _, p in changes):
                    self.watch_wakeups += 1
                    self._event.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("transcript %s: watchfiles stopped (%s); polling instead", self.path, exc)
        finally:
            self._ready = False

    async def _stop_watch(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        self._watched = None
        self._ready = False
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def aclose(self) -> None:
        await self._stop_watch()


def _watchfiles_available() -> bool:
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        return False
    return True


class TranscriptTailSource:
    """StepSource over ``<root>/brain/<cascadeId>/.system_generated/logs/transcript_full.jsonl``.

    Yields a ``snapshot=True`` batch with the whole file when it first appears (and again after a
    truncation or replacement), then one batch per read that found new complete lines. Never ends
    on its own; cancel or ``aclose()`` the iterator to stop.
    """

    name = "transcript"
    live = False

    def __init__(self, root: Path, *, poll_interval: float = 0.25, use_watchfiles: bool = True) -> None:
        self.root = Path(root)
        self.poll_interval = poll_interval
        self.use_watchfiles = use_watchfiles
        self.batches_yielded = 0
        self.watch_wakeups = 0

    def path_for(self, cascade_id: str) -> Path:
        return transcript_path(self.root, cascade_id)

    def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        return self._batches(cascade_id)

    async def _batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        path = self.path_for(cascade_id)
        follower = TranscriptFollower(path, cascade_id=cascade_id)
        waker = _Waker(
            path, stop_at=self.root, poll_interval=self.poll_interval, use_watchfiles=self.use_watchfiles
        )
        try:
            while True:
                for result in follower.poll():
                    if result.steps or result.snapshot:
                        self.batches_yielded += 1
                        yield StepBatch(
                            cascade_id=cascade_id,
                            steps=result.steps,
                            snapshot=result.snapshot,
                            source=self.name,
                        )
                await waker.wait()
                self.watch_wakeups = waker.watch_wakeups
        finally:
            await waker.aclose()
            follower.close()
