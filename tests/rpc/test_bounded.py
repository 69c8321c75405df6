"""The string cutter (adapters/rpc/bounded.py): any JSON, any chunking, the same valid JSON out, with
exactly the strings over the limit cut to a prefix of themselves plus the mark of what was removed (its
size) and of the whole string (its size and SHA-256, as sent)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.adapters.rpc.bounded import StringCutter
from agy_harness.core.cut_marks import cuts_in_text, ending_cut, identity, mark

LIMIT = 12
texts = st.text(alphabet=st.sampled_from(["a", '"', "\\", "\n", "é", "😀", "\u2028", "/", "x"]), max_size=40)
keys = st.text(alphabet="abc", max_size=4)  # (two long keys cut alike would be one key)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


def cut(data: bytes, cuts: list[int], limit: int = LIMIT) -> bytes:
    cutter = StringCutter(limit, 1 << 30)
    pos = 0
    for size in [*cuts, len(data)]:
        cutter.feed(data[pos : pos + max(1, size)])
        pos += max(1, size)
    cutter.feed(data[pos:])
    return cutter.result()


def same_or_cut(original: Any, got: Any, ascii_: bool) -> None:
    if isinstance(original, str):
        raw = json.dumps(original, ensure_ascii=ascii_).encode()[1:-1]
        if len(raw) <= LIMIT:
            assert got == original
        else:
            [cut] = cuts_in_text(got)
            kept = got[: -len(mark(cut.removed, cut.total, cut.sha256))]
            assert original.startswith(kept)
            removed = raw[len(json.dumps(kept, ensure_ascii=ascii_).encode()) - 2 :]
            assert got == kept + mark(len(removed), len(raw), hashlib.sha256(raw).hexdigest())
    elif isinstance(original, list):
        assert len(got) == len(original)
        for a, b in zip(original, got, strict=True):
            same_or_cut(a, b, ascii_)
    elif isinstance(original, dict):
        assert len(got) == len(original)
        for (ka, va), (kb, vb) in zip(original.items(), got.items(), strict=True):
            same_or_cut(ka, kb, ascii_)
            same_or_cut(va, vb, ascii_)
    else:
        assert got == original


@settings(max_examples=400, deadline=None)
@given(value=values, cuts=st.lists(st.integers(min_value=1, max_value=9), max_size=30), ascii_=st.booleans())
def test_any_json_any_chunking(value: Any, cuts: list[int], ascii_: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_).encode()
    out = cut(data, cuts)
    assert out == cut(data, [])  # the chunking never changes the result
    same_or_cut(value, json.loads(out), ascii_)
    assert json.loads(cut(data, cuts, limit=1 << 20)) == value  # nothing long: the same document


def test_strings_that_differ_only_past_the_cut_read_differently() -> None:
    """Issue #35 case 1: the mark carries the removed part's size and hash (before, two requests that
    differed only past the cut read the same, and so had one digest)."""
    a, b = (
        json.loads(cut(json.dumps({"c": "x" * 40 + tail}).encode(), [3]))
        for tail in ("; ls", "; rm -rf work")
    )
    assert a != b
    assert a["c"].startswith("x" * LIMIT) and b["c"].startswith("x" * LIMIT)
    assert [c.removed for c in cuts_in_text(a["c"]) + cuts_in_text(b["c"])] == [32, 41]


@settings(max_examples=200, deadline=None)
@given(value=texts, cuts=st.lists(st.integers(min_value=1, max_value=9), max_size=10), ascii_=st.booleans())
def test_a_string_cut_harder_is_known_as_the_same_string(value: str, cuts: list[int], ascii_: bool) -> None:
    """The whole string's size and hash are in the mark, whatever was kept: a poll's harder cut (1 MiB)
    and the stream's (4 MiB) give the same identity, so one request has one digest (issue #35)."""
    data = json.dumps([value + "z" * 60], ensure_ascii=ascii_).encode()
    [a], [b] = json.loads(cut(data, cuts, limit=LIMIT)), json.loads(cut(data, [], limit=LIMIT + 24))
    [ca], [cb] = cuts_in_text(a), cuts_in_text(b)
    assert a != b and ca.removed != cb.removed
    assert (ca.total, ca.sha256) == (cb.total, cb.sha256)
    assert identity(ca) == identity(cb) and ending_cut(a) == ca


def test_over_the_body_limit_nothing_is_kept() -> None:
    cutter = StringCutter(8, 100)
    cutter.feed(json.dumps([["y" * 5] * 50]).encode())
    assert cutter.over and cutter.result() == b""


nested = st.recursive(values, lambda inner: inner.map(json.dumps), max_leaves=3)  # JSON in strings: runs of \


@settings(max_examples=400, deadline=None)
@given(value=nested, ascii_=st.booleans())
def test_the_counting_fast_path_stops_where_the_token_regex_does(value: Any, ascii_: bool) -> None:
    """The fast path counts quotes and backslash runs in C; on any JSON it stops exactly where the
    regex that matches it token by token stops, for every window end."""
    from agy_harness.adapters.rpc.bounded import _SHORT_STRINGS, _match_end, _short_strings_end

    data = json.dumps([value, {"k": value}], ensure_ascii=ascii_).encode()
    for stop in range(len(data) + 1):
        assert _short_strings_end(data, 0, stop) == _match_end(_SHORT_STRINGS, data, 0, stop), stop


def test_deep_backslash_runs_take_the_regex() -> None:
    text = json.dumps(["a" + "\\" * 40 + '"', "b"]).encode()
    from agy_harness.adapters.rpc.bounded import _SHORT_STRINGS, _match_end, _short_strings_end

    for stop in range(len(text) + 1):
        assert _short_strings_end(text, 0, stop) == _match_end(_SHORT_STRINGS, text, 0, stop)
