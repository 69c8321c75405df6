"""Connect server-stream envelopes: ``[flags:1][big-endian uint32 length:4][JSON payload]``.

Pure code, no I/O. Bad *data* never raises: a frame whose payload is not a JSON object (or is
compressed, or carries unknown flag bits, or is over the limit even with its long strings cut)
comes back as a :class:`Frame` with ``bad`` set and the decoder carries on with the next envelope.
Memory stays bounded: a big frame is cut as it arrives (:mod:`.bounded`). Only a stream that ends
inside an envelope raises: :class:`~.errors.TruncatedStreamError` from :meth:`EnvelopeDecoder.close`.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agy_harness.core import safejson

from .bounded import MAX_BODY, MAX_STRING, StringCutter
from .errors import TruncatedStreamError

FLAG_COMPRESSED = 0x01
FLAG_END_STREAM = 0x02
HEADER_SIZE = 5
DEFAULT_MAX_FRAME = MAX_BODY
_HEADER = struct.Struct(">BI")


class BadFrame(StrEnum):
    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    COMPRESSED = "compressed"
    UNKNOWN_FLAGS = "unknown_flags"
    TOO_LARGE = "too_large"  # over the frame limit even with its long strings cut (adapters/rpc/bounded.py)


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded envelope. ``payload`` is the JSON object, or None when ``bad`` says why not."""

    flags: int
    data: bytes
    payload: dict[str, Any] | None
    bad: BadFrame | None = None
    detail: str = ""

    @property
    def is_trailer(self) -> bool:
        return bool(self.flags & FLAG_END_STREAM)

    @property
    def trailer_error(self) -> dict[str, Any] | None:
        """The trailer's ``error`` object ({"code","message"}), if this is a trailer that has one."""
        if not self.is_trailer or self.payload is None:
            return None
        error = self.payload.get("error")
        if error is None:
            return None
        return error if isinstance(error, dict) else {"code": "unknown", "message": repr(error)}


def encode_envelope(obj: Any, flag: int = 0) -> bytes:
    """One envelope carrying ``obj`` as compact UTF-8 JSON."""
    data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    return _HEADER.pack(flag, len(data)) + data


def decode_payload(flags: int, data: bytes) -> Frame:
    """Interpret one envelope's payload (never raises)."""
    if flags & FLAG_COMPRESSED:
        return Frame(flags, data, None, BadFrame.COMPRESSED, "compression was not negotiated")
    if flags & ~(FLAG_COMPRESSED | FLAG_END_STREAM):
        return Frame(flags, data, None, BadFrame.UNKNOWN_FLAGS, f"flags 0x{flags:02x}")
    if not data and flags & FLAG_END_STREAM:
        return Frame(flags, data, {})
    try:
        value = safejson.loads(data)  # an over-deep / over-long part is cut, the rest kept
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return Frame(flags, data, None, BadFrame.INVALID_JSON, str(exc)[:200])
    if not isinstance(value, dict):
        return Frame(flags, data, None, BadFrame.NOT_AN_OBJECT, type(value).__name__)
    return Frame(flags, data, value)


class EnvelopeDecoder:
    """Incremental decoder: feed it chunks as they arrive, get whole frames back.

    A frame longer than ``max_string`` may hold a string to cut: its payload goes through a
    :class:`~.bounded.StringCutter` as it arrives (never buffered whole). A frame still over
    ``max_frame`` after the cut comes back as a ``TOO_LARGE`` bad frame and the stream goes on.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, max_string: int = MAX_STRING) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._max_string = max_string
        self._big: tuple[int, int, StringCutter] | None = None  # (flags, bytes still to come, cutter)

    @property
    def pending(self) -> int:
        """Bytes of an incomplete envelope held back."""
        return len(self._buf) + (len(self._big[2].out) if self._big else 0)

    def _feed_big(self, view: memoryview, frames: list[Frame]) -> int:
        """Feed the big frame in progress; the bytes of ``view`` it took."""
        assert self._big is not None
        flags, left, cutter = self._big
        take = min(left, len(view))
        cutter.feed(bytes(view[:take]))
        left -= take
        if left:
            self._big = (flags, left, cutter)
            return take
        self._big = None
        if cutter.over:
            detail = f"a frame of {cutter.fed} bytes is over {self._max} even with its long strings cut"
            frames.append(Frame(flags, b"", None, BadFrame.TOO_LARGE, detail))
        else:
            frame = decode_payload(flags, cutter.result())
            frames.append(frame if not cutter.cuts else _with_detail(frame, f"{cutter.cuts} string(s) cut"))
        return take

    def feed(self, chunk: bytes) -> list[Frame]:
        frames: list[Frame] = []
        view = memoryview(chunk)
        if self._big is not None:
            view = view[self._feed_big(view, frames) :]
        self._buf += view
        pos = 0
        buf = self._buf
        while len(buf) - pos >= HEADER_SIZE:
            flags, length = _HEADER.unpack_from(buf, pos)
            if length > self._max_string or length > self._max:  # cut as it comes, never whole in memory
                self._big = (flags, length, StringCutter(self._max_string, self._max))
                rest = memoryview(buf)[pos + HEADER_SIZE :]
                used = self._feed_big(rest, frames)
                rest.release()
                pos += HEADER_SIZE + used
                if self._big is not None:
                    break
                continue
            end = pos + HEADER_SIZE + length
            if end > len(buf):
                break
            frames.append(decode_payload(flags, bytes(buf[pos + HEADER_SIZE : end])))
            pos = end
        del buf[:pos]
        return frames

    def close(self) -> None:
        """End of input: raise TruncatedStreamError if a partial envelope is left over."""
        if self._buf or self._big is not None:
            raise TruncatedStreamError(self.pending)


def _with_detail(frame: Frame, detail: str) -> Frame:
    return Frame(frame.flags, frame.data, frame.payload, frame.bad, detail)


#: Fields of an update object: a data frame that carries them without the ``update`` envelope is
#: read as the update itself (the reference harness does the same, omnigent 0.19.1 rpc.py
#: stream_agent_state_updates: "if a future agy ever drops the envelope").
_UPDATE_FIELDS = frozenset({"mainTrajectoryUpdate", "conversationId", "status"})


def unwrap_update(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``update`` object of a StreamAgentStateUpdates frame (the frame itself when it is a bare
    update), or None if it has none."""
    if payload is None:
        return None
    if "update" not in payload and _UPDATE_FIELDS & payload.keys():
        return payload
    update = payload.get("update")
    return update if isinstance(update, dict) else None
