"""Envelope codec: unit cases and hypothesis fuzzing."""

from __future__ import annotations

import hashlib
import itertools
import json
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.adapters.rpc.codec import (
    FLAG_COMPRESSED,
    FLAG_END_STREAM,
    BadFrame,
    EnvelopeDecoder,
    Frame,
    encode_envelope,
    unwrap_update,
)
from agy_harness.adapters.rpc.errors import CodecError, TruncatedStreamError
from agy_harness.core.cut_marks import mark


def raw_envelope(flags: int, data: bytes) -> bytes:
    return struct.pack(">BI", flags, len(data)) + data


def test_encode_layout() -> None:
    env = encode_envelope({"a": 1})
    assert env[0] == 0
    assert struct.unpack(">I", env[1:5])[0] == len(env) - 5
    assert json.loads(env[5:]) == {"a": 1}
    assert encode_envelope({}, FLAG_END_STREAM)[0] == FLAG_END_STREAM


def test_encode_utf8_length_counts_bytes() -> None:
    env = encode_envelope({"t": "héllo 📁"})
    assert struct.unpack(">I", env[1:5])[0] == len(env[5:])
    assert EnvelopeDecoder().feed(env)[0].payload == {"t": "héllo 📁"}


def test_frames_split_across_chunks_byte_by_byte() -> None:
    data = encode_envelope({"update": {"n": 1}}) + encode_envelope({"update": {"n": 2}})
    dec = EnvelopeDecoder()
    out: list[Frame] = []
    for i in range(len(data)):
        out += dec.feed(data[i : i + 1])
    assert [f.payload for f in out] == [{"update": {"n": 1}}, {"update": {"n": 2}}]
    assert dec.pending == 0
    dec.close()


def test_several_frames_in_one_chunk_and_partial_tail() -> None:
    a, b, c = (encode_envelope({"i": i}) for i in range(3))
    dec = EnvelopeDecoder()
    frames = dec.feed(a + b + c[:3])
    assert [f.payload for f in frames] == [{"i": 0}, {"i": 1}]
    assert dec.pending == 3
    assert [f.payload for f in dec.feed(c[3:])] == [{"i": 2}]


def test_leftover_partial_frame_at_eof_is_an_error() -> None:
    dec = EnvelopeDecoder()
    assert dec.feed(encode_envelope({"x": 1})[:-1]) == []
    with pytest.raises(TruncatedStreamError) as info:
        dec.close()
    assert info.value.pending == len(encode_envelope({"x": 1})) - 1


def test_partial_header_at_eof_is_an_error() -> None:
    dec = EnvelopeDecoder()
    dec.feed(b"\x00\x00")
    with pytest.raises(TruncatedStreamError):
        dec.close()


def test_compressed_flag_refused_as_bad_frame_and_decoding_continues() -> None:
    dec = EnvelopeDecoder()
    frames = dec.feed(raw_envelope(FLAG_COMPRESSED, b"\x1f\x8b junk") + encode_envelope({"ok": True}))
    assert frames[0].bad is BadFrame.COMPRESSED and frames[0].payload is None
    assert frames[1].payload == {"ok": True} and frames[1].bad is None


def test_unknown_flag_bits_are_a_bad_frame() -> None:
    (frame,) = EnvelopeDecoder().feed(raw_envelope(0x80, b"{}"))
    assert frame.bad is BadFrame.UNKNOWN_FLAGS


def test_trailer_without_error() -> None:
    (frame,) = EnvelopeDecoder().feed(encode_envelope({}, FLAG_END_STREAM))
    assert frame.is_trailer and frame.trailer_error is None and frame.bad is None


def test_empty_trailer_payload_is_an_empty_object() -> None:
    (frame,) = EnvelopeDecoder().feed(raw_envelope(FLAG_END_STREAM, b""))
    assert frame.is_trailer and frame.payload == {}


def test_trailer_with_error() -> None:
    err = {"code": "not_found", "message": "trajectory not found"}
    (frame,) = EnvelopeDecoder().feed(encode_envelope({"error": err, "metadata": {}}, FLAG_END_STREAM))
    assert frame.trailer_error == err


def test_trailer_with_non_object_error_is_still_an_error() -> None:
    (frame,) = EnvelopeDecoder().feed(encode_envelope({"error": "boom"}, FLAG_END_STREAM))
    assert frame.trailer_error is not None and frame.trailer_error["code"] == "unknown"


def test_data_frame_has_no_trailer_error() -> None:
    (frame,) = EnvelopeDecoder().feed(encode_envelope({"error": {"code": "x"}}))
    assert not frame.is_trailer and frame.trailer_error is None


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", BadFrame.INVALID_JSON),
        (b"\xff\xfe", BadFrame.INVALID_JSON),
        (b"", BadFrame.INVALID_JSON),
        (b"[1, 2]", BadFrame.NOT_AN_OBJECT),
        (b'"update"', BadFrame.NOT_AN_OBJECT),
        (b"null", BadFrame.NOT_AN_OBJECT),
        (b"[" * 100_000, BadFrame.INVALID_JSON),
    ],
)
def test_bad_payloads_are_reported_and_decoding_continues(data: bytes, reason: BadFrame) -> None:
    dec = EnvelopeDecoder()
    frames = dec.feed(raw_envelope(0, data) + encode_envelope({"after": 1}))
    assert frames[0].bad is reason and frames[0].payload is None and frames[0].data == data
    assert frames[1].payload == {"after": 1}


def test_a_frame_over_the_limit_is_reported_and_decoding_continues() -> None:
    """It used to raise FrameTooLargeError: the stream was given up for good (issue #20, case 4)."""
    dec = EnvelopeDecoder(max_frame=10)
    good = encode_envelope({"a": 1})
    big = encode_envelope({"a": [1] * 20})
    frames = dec.feed(good + big[:9])
    frames += dec.feed(big[9:] + good)
    dec.close()
    assert [f.payload for f in frames] == [{"a": 1}, None, {"a": 1}]
    assert frames[1].bad is BadFrame.TOO_LARGE and "over 10" in frames[1].detail


def test_a_long_string_is_cut_as_it_arrives_and_the_frame_kept() -> None:
    dec = EnvelopeDecoder(max_frame=200, max_string=8)
    wire = encode_envelope({"step": {"output": "x" * 1000, "ok": "short"}}) + encode_envelope({"b": 2})
    frames = [f for i in range(0, len(wire), 7) for f in dec.feed(wire[i : i + 7])]
    dec.close()
    cut = "x" * 8 + mark(992, 1000, hashlib.sha256(b"x" * 1000).hexdigest())
    assert frames[0].payload == {"step": {"output": cut, "ok": "short"}}
    assert frames[1].payload == {"b": 2}
    assert dec.pending == 0


def test_unwrap_update() -> None:
    assert unwrap_update({"update": {"conversationId": "c"}}) == {"conversationId": "c"}
    assert unwrap_update({"update": [1]}) is None
    assert unwrap_update({"other": 1}) is None
    assert unwrap_update(None) is None
    # a data frame without the envelope is the update itself (the reference reads it so)
    bare = {"conversationId": "c", "mainTrajectoryUpdate": {"stepsUpdate": {"steps": []}}}
    assert unwrap_update(bare) == bare


# ------------------------------------------------------------------------------------------ fuzz

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.floats(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=5)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=80, deadline=None)
@given(
    objs=st.lists(st.tuples(json_objects, st.sampled_from([0, FLAG_END_STREAM])), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_random_chunking_reconstructs_exactly(
    objs: list[tuple[dict[str, Any], int]], cuts: list[int]
) -> None:
    data = b"".join(encode_envelope(o, f) for o, f in objs)
    dec = EnvelopeDecoder()
    frames: list[Frame] = []
    for chunk in chunked(data, cuts):
        frames += dec.feed(chunk)
    dec.close()
    assert [(f.payload, f.flags) for f in frames] == objs
    assert all(f.bad is None for f in frames)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_arbitrary_bytes_raise_only_documented_errors(data: bytes, cuts: list[int]) -> None:
    dec = EnvelopeDecoder(max_frame=1024)
    frames: list[Frame] = []
    try:
        for chunk in chunked(data, cuts):
            frames += dec.feed(chunk)
        dec.close()
    except CodecError:
        pass
    for f in frames:
        assert (f.payload is None) == (f.bad is not None)
        assert f.payload is None or isinstance(f.payload, dict)


@settings(max_examples=80, deadline=None)
@given(items=st.lists(st.one_of(json_objects, st.binary(max_size=40)), max_size=8))
def test_bad_envelopes_do_not_hide_good_ones(items: list[dict[str, Any] | bytes]) -> None:
    """Well-framed garbage payloads are reported in place; every good frame still comes out in order."""
    wire = b"".join(raw_envelope(0, i) if isinstance(i, bytes) else encode_envelope(i) for i in items)
    frames = EnvelopeDecoder().feed(wire)
    assert len(frames) == len(items)
    for item, frame in zip(items, frames, strict=True):
        if isinstance(item, dict):
            assert frame.payload == item
        else:
            assert frame.data == item
