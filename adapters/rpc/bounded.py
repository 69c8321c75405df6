"""Bounded reading of what agy sends: every string value cut at :data:`MAX_STRING`, every body at a limit.

agy's answers and stream frames are JSON; one step can carry tens of megabytes (a file read, a
command's output), and a snapshot carries every step. Read whole, one 160 MB answer grew the
harness by 455-606 MB, and one 33 MB step pushed stream frames past any sane cap. Here:

* :class:`StringCutter` copies a JSON byte stream as it arrives, chunk by chunk, and cuts every
  string value longer than :data:`MAX_STRING` bytes (as sent: escaped UTF-8) to its first
  :data:`MAX_STRING` bytes plus a mark (:func:`agy_harness.core.cut_marks.mark`) that carries the
  removed part's size and the whole string's size and SHA-256, hashed as the bytes arrive (the
  removed part is never kept): two strings that differ only past the cut still read differently, so
  their requests' digests and cards differ, and a string cut harder (a poll's re-read) is still known
  as the same string. The cut
  never splits an escape or a UTF-8 character. The rule depends only on the string, so a step cut on
  the stream reads the same as the same step cut in a poll (an id always names the same content); a
  reply that grows past the limit stops streaming deltas there (its mark changes as it grows: a
  rewrite, which sends nothing; the committed message carries the final mark).
* What is still over the body limit after the cut is not kept: the copy stops growing at the
  limit (``over`` is set) and the caller reports a clear error (a poll) or skips the frame (the
  stream goes on). Memory is bounded by the limit whatever agy sends.

Bodies shorter than :data:`MAX_STRING` cannot hold a string to cut and are read as they are.
Pure code, no I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterable

from agy_harness.core.cut_marks import mark

MAX_STRING = 4 << 20  # bytes of one JSON string value (escaped), as sent
MAX_BODY = 64 << 20  # bytes of one answer or stream frame, after long strings are cut


def marker(removed: int, total: int, sha256_hex: str) -> bytes:
    """What ends a cut string (JSON string content): the removed part's size, the whole string's size
    and hash."""
    return mark(removed, total, sha256_hex).replace("\u2026", "\\u2026").encode("ascii")


WINDOW = 1 << 20  # bytes the fast path looks at in one go

# JSON outside strings and whole strings, as far as they go (a string that does not close is left)
_SHORT_STRINGS = re.compile(rb'(?:[^"]++|"(?:[^"\\]++|\\.)*+")*+', re.S)
# a JSON string's content up to its closing quote, or to a backslash ending the chunk (whole escapes)
_CONTENT = re.compile(rb'(?:[^"\\]++|\\.)*+', re.S)


def _match_end(pattern: re.Pattern[bytes], data: bytes, pos: int, endpos: int) -> int:
    """Where ``pattern`` (which matches the empty string too) stops, from ``pos``."""
    found = pattern.match(data, pos, endpos)
    return found.end() if found is not None else pos


def _short_strings_end(chunk: bytes, pos: int, stop: int) -> int:
    """Where the JSON of ``chunk[pos:stop]`` (``pos`` outside a string) stops being whole strings and
    the bytes between them: ``stop`` when it ends outside a string, else the opening quote of the
    string that goes on past ``stop`` -- what ``_SHORT_STRINGS`` matches, by counting in C instead of
    matching token by token (a quarter of the cost).

    A quote is escaped when an odd run of backslashes precedes it; ``count`` of a run of ``m``
    backslashes and a quote counts the quotes preceded by ``m`` or more, so the escaped ones are
    ``c1 - c2 + c3 - ...``, and the quotes left open or close the strings. (Outside strings JSON has
    no backslash, so a run never reaches back past ``pos``. A document with one there is no JSON:
    its decode fails whatever is cut. Long runs, or a string with many escaped quotes at the end,
    take the regex.)"""
    quotes = chunk.count(b'"', pos, stop)
    if not quotes:
        return stop
    escaped, sign = 0, 1
    for run in _RUNS:
        found = chunk.count(run, pos, stop)
        if not found:
            break
        escaped += sign * found
        sign = -sign
    else:
        return _match_end(_SHORT_STRINGS, chunk, pos, stop)
    if (quotes - escaped) % 2 == 0:
        return stop
    quote = stop
    for _ in range(16):  # the last quote that is not escaped opens the string left open
        quote = chunk.rfind(b'"', pos, quote)
        if quote < 0 or not _odd_run(chunk, pos, quote, False):
            return max(quote, pos)
    return _match_end(_SHORT_STRINGS, chunk, pos, stop)


_RUNS = tuple(b"\\" * m + b'"' for m in range(1, 9))


def _odd_run(chunk: bytes, start: int, stop: int, carried: bool) -> bool:
    """Whether ``chunk[start:stop]`` ends in an odd run of backslashes (``carried``: the content
    before ``start`` did, which counts when the run reaches back to ``start``)."""
    part = chunk[start:stop]
    run = len(part) - len(part.rstrip(b"\\"))
    return (run % 2 == 1) != (run == len(part) and carried)


_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


def _escapes(buf: bytearray, start: int, i: int) -> bool:
    """``buf[i]`` (a backslash) starts an escape: an even number of backslashes precede it."""
    j = i
    while j > start and buf[j - 1] == 0x5C:
        j -= 1
    return (i - j) % 2 == 0


def _safe_end(buf: bytearray, start: int, end: int) -> int:
    """Where to cut ``buf[start:end]`` (string content) so no escape or UTF-8 character is split."""
    i = buf.rfind(b"\\", max(start, end - 6), end)
    if i >= 0 and _escapes(buf, start, i):
        need = 6 if buf[i + 1 : i + 2] == b"u" else 2
        if end - i < need:
            end = i
    if end - 6 >= start and _HIGH_SURROGATE.fullmatch(buf, end - 6, end) and _escapes(buf, start, end - 6):
        end -= 6  # the first half of a surrogate pair: keep neither half
    k = end - 1
    while k >= start and end - k < 4 and buf[k] & 0xC0 == 0x80:
        k -= 1
    if k >= start and buf[k] >= 0xC0:
        need = 2 if buf[k] < 0xE0 else 3 if buf[k] < 0xF0 else 4
        if end - k < need:
            end = k
    return end


class StringCutter:
    """A JSON document fed in chunks, copied with its long strings cut (see the module doc)."""

    def __init__(self, max_string: int = MAX_STRING, max_body: int = MAX_BODY) -> None:
        self.max_string = max_string
        self.max_body = max_body
        self.out = bytearray()
        self.fed = 0  # bytes taken in
        self.cuts = 0  # strings cut
        self.over = False  # the copy went past max_body: it is incomplete, not to be used
        self._in_string = False
        self._odd = False  # the current string's content so far ends in an odd run of backslashes
        self._start = 0  # where the current string's content starts in ``out``
        self._cut = False  # the current string was cut
        self._whole = hashlib.sha256()  # all of the current string, once it was cut
        self._whole_bytes = 0
        self._removed_bytes = 0

    def _emit(self, data: bytes | memoryview) -> None:
        if self.over:
            return
        if len(self.out) + len(data) > self.max_body:
            self.over = True
            self.out = bytearray()  # what is over the limit is not kept
            return
        self.out += data

    def _content(self, data: bytes | memoryview) -> None:
        """Bytes inside the current string, as they arrive (an escape may be split between calls)."""
        if self._cut:
            self._whole.update(data)
            self._whole_bytes += len(data)
            self._removed_bytes += len(data)
            return
        self._emit(data)
        if not self.over and len(self.out) - self._start > self.max_string:
            end = _safe_end(self.out, self._start, self._start + self.max_string)
            self._whole = hashlib.sha256(self.out[self._start :])
            self._whole_bytes = len(self.out) - self._start
            self._removed_bytes = len(self.out) - end
            del self.out[end:]
            self._cut = True
            self.cuts += 1

    def feed(self, chunk: bytes) -> None:
        self.fed += len(chunk)
        view = memoryview(chunk)
        pos, end = 0, len(chunk)
        window = min(WINDOW, self.max_string)
        while pos < end:
            if not self._in_string:
                # fast path (C speed): JSON whose strings all close within one window -- shorter than
                # the window, so none is cut; it stops before a string that goes on past the window
                stop = _short_strings_end(chunk, pos, min(end, pos + window))
                if stop > pos:
                    self._emit(view[pos:stop])
                    pos = stop
                    continue
                self._emit(view[pos : pos + 1])  # the opening quote of a string that may be long
                self._in_string, self._start, self._cut, self._odd = True, len(self.out), False, False
                pos += 1
                continue
            quote = chunk.find(b'"', pos)
            stop = end if quote < 0 else quote
            odd = _odd_run(chunk, pos, stop, self._odd)  # an odd run of backslashes escapes the quote
            if quote < 0:
                self._content(view[pos:])
                self._odd = odd
                return
            if odd:  # an escaped quote: the rest of this string in this chunk by the regex (C speed)
                stop = _match_end(_CONTENT, chunk, quote + 1, end)
                if stop >= end or chunk[stop] == 0x5C:  # the string goes on in the next chunk
                    self._content(view[pos:])
                    self._odd = stop < end  # a backslash ended the chunk: it escapes the next byte
                    return
            self._content(view[pos:stop])
            if self._cut:
                self._emit(marker(self._removed_bytes, self._whole_bytes, self._whole.hexdigest()))
            self._emit(b'"')
            self._in_string = False
            pos = stop + 1

    def result(self) -> bytes:
        return bytes(self.out)


class BodyTooLarge(ValueError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"an answer of {size}+ bytes is over {limit} bytes even with its long strings cut")
        self.size, self.limit = size, limit


async def read_body(
    chunks: AsyncIterable[bytes], *, max_body: int = MAX_BODY, max_string: int = MAX_STRING
) -> tuple[bytes, int]:
    """A whole JSON body from ``chunks``, long strings cut; ``(body, strings cut)``. Raises
    BodyTooLarge as soon as the cut body passes ``max_body`` (the rest is not read)."""
    buf = bytearray()
    cutter: StringCutter | None = None
    async for chunk in chunks:
        if cutter is None:
            buf += chunk
            if len(buf) <= max_string and len(buf) <= max_body:
                continue
            cutter = StringCutter(max_string, max_body)
            chunk, buf = bytes(buf), bytearray()
        cutter.feed(chunk)
        if cutter.over:
            raise BodyTooLarge(cutter.fed, max_body)
    if cutter is None:
        return bytes(buf), 0
    return cutter.result(), cutter.cuts
