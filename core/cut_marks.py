"""The mark that ends a string agy sent over the size limit, and finding it again. Pure.

The RPC reader (``adapters/rpc/bounded.py``) cuts every string value agy sends past 4 MiB as it
arrives (harder, down to 4 KiB, where a poll answer would not fit otherwise). What it removes is not
lost without a trace: the cut string ends in a mark that carries the removed part's size and what
identifies the WHOLE string as agy sent it -- its size and the SHA-256 of all its bytes (as agy sent
them: JSON-escaped UTF-8), hashed as they arrive::

    …(truncated: 4194310 more bytes of 8388614, whole sha256:1a2b3c4d5e6f708192a3b4c5d6e7f801)

So two requests that differ only past the cut are two different texts (their digests differ, their
cards differ), and the same string cut at 4 MiB on the stream and at 1 MiB by a poll is known as the
same string: :func:`identity` stands for a cut string in the request digest
(:mod:`agy_harness.core.binding`), whatever was kept of it. A request with a cut part is known as one:
nowhere can its whole text be shown, so no human can approve it
(:func:`agy_harness.core.answers.parse_answer` refuses an allow; a denial goes through). agy could
write such a mark itself: that only makes its request unapprovable (fail closed), never approvable; a
forged mark ending a string makes that string's digest part the one of the string it names, so at
worst a denial given for one of agy's requests reaches another it forged alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

HASH_CHARS = 32  # hex characters of the whole string's SHA-256 kept in the mark (128 bits)
LEAD = "\u2026(truncated: "


def mark(removed: int, total: int, sha256_hex: str) -> str:
    """The mark that ends a string of ``total`` bytes (SHA-256 ``sha256_hex`` of all of them) whose
    last ``removed`` bytes were cut."""
    return f"{LEAD}{removed} more bytes of {total}, whole sha256:{sha256_hex[:HASH_CHARS]})"


_MARK = re.compile(
    rf"\u2026\(truncated: (\d{{1,20}}) more bytes of (\d{{1,20}}), whole sha256:([0-9a-f]{{{HASH_CHARS}}})\)"
)


@dataclass(frozen=True, slots=True)
class Cut:
    removed: int  # bytes cut (as agy sent them)
    total: int  # bytes of the whole string (as agy sent them)
    sha256: str  # of the whole string's bytes (hex prefix)

    @property
    def short(self) -> str:
        return self.sha256[:16]


def _cut(found: re.Match[str]) -> Cut:
    return Cut(int(found.group(1)), int(found.group(2)), found.group(3))


def cuts_in_text(text: str) -> list[Cut]:
    """The cut marks in ``text`` (a string the reader cut ends in one)."""
    if LEAD not in text:
        return []
    return [_cut(m) for m in _MARK.finditer(text)]


def ending_cut(text: str) -> Cut | None:
    """The cut mark that ends ``text`` (a string the reader cut), if one does."""
    if LEAD not in text or not text.endswith(")"):
        return None
    start = text.rfind(LEAD)
    found = _MARK.fullmatch(text, start)
    return _cut(found) if found is not None else None


def identity(cut: Cut) -> str:
    """What stands for a cut string in a request's digest: the whole string's size and hash, the same
    whatever was kept of it (a 4 MiB cut on the stream, a 1 MiB one in a poll)."""
    return f"{LEAD}cut string of {cut.total} bytes, whole sha256:{cut.sha256})"


def identities(value: Any, depth: int = 0) -> Any:
    """``value`` with every string a cut mark ends replaced by its :func:`identity` (dict keys too;
    containers copied only where something changed, a bounded depth deep)."""
    if isinstance(value, str):
        cut = ending_cut(value)
        return value if cut is None else identity(cut)
    if depth > 64:
        return value
    if isinstance(value, dict):
        items = [(identities(k, depth + 1), identities(v, depth + 1)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        out = [identities(item, depth + 1) for item in value]
        return value if all(a is b for a, b in zip(out, value, strict=True)) else out
    return value


def without_cuts(text: str) -> str:
    """``text`` without its cut marks (what agy sent of it)."""
    return _MARK.sub("", text) if LEAD in text else text


def cuts_in(value: Any) -> Iterator[Cut]:
    """Every cut mark in ``value`` (strings, lists and dicts, keys too), however deep: a mark nested
    past any depth is still found (a depth limit here would let an allow through; the value itself is
    bounded by the reader)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield from cuts_in_text(item)
        elif isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                stack.append(inner)
                stack.append(key)
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
