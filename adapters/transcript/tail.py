"""A step source that follows agy's transcript: the current ``transcript.jsonl`` (:mod:`.modern`) or the
legacy ``transcript_full.jsonl`` (:mod:`.format`), under either brain root (:mod:`.locate`); each line
is read in the format it is written in.

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
import logging
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agy_harness.core import safejson
from agy_harness.ports.protocols import StepBatch

from . import modern
from .format import line_to_step
from .locate import DEFAULT_ROOTS, NAMES, candidates, find_transcript
from .waker import Waker as _Waker

log = logging.getLogger(__name__)

_PREFIX_BYTES = 256
_READ_SIZE = 1 << 16
MAX_LINE = 64 << 20  # bytes of one transcript line (agy cuts long fields itself: "<truncated N bytes>")


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
    skipping: bool = False  # inside a line over the limit: dropped up to its newline


class TranscriptFollower:
    """Reads the complete lines appended to one transcript file since the last :meth:`poll`."""

    def __init__(
        self, path: Path, *, cascade_id: str = "", read_size: int = _READ_SIZE, max_line: int = MAX_LINE
    ) -> None:
        self.path = path
        self.cascade_id = cascade_id
        self._read_size = read_size
        self._max_line = max_line
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
        gen.skipping = False
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
            if len(gen.buffer) > self._max_line:  # a line that long is not kept: bounded memory
                if not gen.skipping:
                    self.malformed += 1
                    log.error("transcript %s:%d: a line over %d bytes; skipped", self.path, gen.lineno + 1,
                              self._max_line)  # fmt: skip
                gen.skipping = True
                gen.buffer.clear()
        if final and gen.buffer and not gen.skipping:
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
            if gen.skipping:  # the end of a line over the limit
                gen.skipping = False
                continue
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
            obj = safejson.loads(text)
        except ValueError as exc:
            why = "an unterminated last line" if partial else "not JSON"
            self._malformed(where, f"{why} ({exc})")
            return
        if modern.is_modern_line(obj):
            step = modern.line_to_step(obj, cascade_id=self.cascade_id)
        else:
            step = line_to_step(obj, cascade_id=self.cascade_id)
        if step is None:
            self._malformed(where, "not a transcript step (needs an object with a type and a step_index)")
            return
        steps.append(step)

    def _malformed(self, where: str, why: str) -> None:
        self.malformed += 1
        log.warning("%s: skipping a malformed transcript line: %s", where, why)


class TranscriptTailSource:
    """StepSource over agy's transcript of a cascade (see :mod:`.locate` for where it is looked for).

    Yields a ``snapshot=True`` batch with the whole file when it first appears (and again after a
    truncation, a replacement, or agy's in-place rewrite during context compaction), then one batch
    per read that found new complete lines. Never ends on its own; cancel or ``aclose()`` the
    iterator to stop. ``root`` is one data root (the directory holding ``brain/``) or several, tried
    in order; by default agy's two (``~/.gemini/antigravity-cli``, ``~/.gemini/antigravity``).
    """

    name = "transcript"
    live = False

    def __init__(
        self,
        root: Path | Sequence[Path] | None = None,
        *,
        poll_interval: float = 0.25,
        use_watchfiles: bool = True,
    ) -> None:
        if root is None:
            roots: list[Path] = list(DEFAULT_ROOTS)
        elif isinstance(root, str | Path):
            roots = [Path(root)]
        else:
            roots = [Path(r) for r in root]
        self.roots = roots
        self.root = roots[0]
        self.poll_interval = poll_interval
        self.use_watchfiles = use_watchfiles
        self.batches_yielded = 0
        self.watch_wakeups = 0

    def path_for(self, cascade_id: str) -> Path:
        """The transcript being followed for ``cascade_id``: an existing one, else the first place agy
        would write it."""
        return find_transcript(self.roots, cascade_id) or candidates(self.roots, cascade_id)[0]

    def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        return self._batches(cascade_id)

    async def _batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        found = find_transcript(self.roots, cascade_id)
        if found is None:  # nothing yet: watch every place agy may write it
            places = candidates(self.roots, cascade_id)[:: len(NAMES)]  # one per root (same directory)
            wakers = [
                _Waker(p, stop_at=r, poll_interval=self.poll_interval, use_watchfiles=self.use_watchfiles)
                for p, r in zip(places, self.roots, strict=True)
            ]
            try:
                while found is None:
                    waits = [asyncio.ensure_future(w.wait()) for w in wakers]
                    try:
                        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        for task in waits:
                            task.cancel()
                        await asyncio.gather(*waits, return_exceptions=True)
                    found = find_transcript(self.roots, cascade_id)
            finally:
                for w in wakers:
                    await w.aclose()
        root = next((r for r in self.roots if found.is_relative_to(r)), self.root)
        follower = TranscriptFollower(found, cascade_id=cascade_id)
        waker = _Waker(
            found, stop_at=root, poll_interval=self.poll_interval, use_watchfiles=self.use_watchfiles
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
