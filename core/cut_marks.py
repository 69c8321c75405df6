"""The mark that ends a string agy sent over the size limit, and finding it again. Pure.

The RPC reader (``adapters/rpc/bounded.py``) cuts every string value agy sends past 4 MiB as it
arrives. What it removes is not lost without a trace: the cut string ends in a mark that carries the
removed part's size (bytes as agy sent them, JSON-escaped UTF-8) and the SHA-256 of those bytes::

    …(truncated: 4194310 more bytes, sha256:1a2b3c4d5e6f708192a3b4c5d6e7f801)

So two requests that differ only past the cut are two different texts (their digests differ, their
cards differ), and a request with a cut part is known as one: nowhere can its whole text be shown, so
no human can approve it (:func:`agy_harness.core.answers.parse_answer` refuses an allow; a denial
goes through). agy could write such a mark itself into a short string: that only makes its request
unapprovable (fail closed), never approvable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

HASH_CHARS = 32  # hex characters of the removed part's SHA-256 kept in the mark (128 bits)
LEAD = "\u2026(truncated: "


def mark(removed: int, sha256_hex: str) -> str:
    """The mark that ends a string whose last ``removed`` bytes (hash ``sha256_hex``) were cut."""
    return f"{LEAD}{removed} more bytes, sha256:{sha256_hex[:HASH_CHARS]})"


_MARK = re.compile(rf"\u2026\(truncated: (\d{{1,20}}) more bytes, sha256:([0-9a-f]{{{HASH_CHARS}}})\)")


@dataclass(frozen=True, slots=True)
class Cut:
    removed: int  # bytes cut (as agy sent them)
    sha256: str  # of the removed bytes (hex prefix)

    @property
    def short(self) -> str:
        return self.sha256[:16]


def cuts_in_text(text: str) -> list[Cut]:
    """The cut marks in ``text`` (a string the reader cut ends in one)."""
    if LEAD not in text:
        return []
    return [Cut(int(m.group(1)), m.group(2)) for m in _MARK.finditer(text)]


def without_cuts(text: str) -> str:
    """``text`` without its cut marks (what agy sent of it)."""
    return _MARK.sub("", text) if LEAD in text else text


def cuts_in(value: Any, depth: int = 0) -> Iterator[Cut]:
    """Every cut mark in ``value`` (strings, lists and dicts, keys too, a bounded depth deep)."""
    if isinstance(value, str):
        yield from cuts_in_text(value)
    elif depth > 64:
        return
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from cuts_in(key, depth + 1)
            yield from cuts_in(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from cuts_in(item, depth + 1)
