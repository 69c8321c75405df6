"""Connect server-stream envelopes: ``[flags:1][big-endian uint32 length:4][JSON payload]``.

Pure code, no I/O. Bad *data* never raises: a frame whose payload is not a JSON object (or is
compressed, or carries unknown flag bits) comes back as a :class:`Frame` with ``bad`` set and the
decoder carries on with the next envelope. Only a stream that cannot be resynchronised raises:
:class:`~.errors.FrameTooLargeError` (from :meth:`EnvelopeDecoder.feed`, or from ``close`` when
frames decoded before it were returned first) and :class:`~.errors.TruncatedStreamError` from
:meth:`EnvelopeDecoder.close`.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agy_harness.core import safejson

from .errors import FrameTooLargeError, TruncatedStreamError

FLAG_COMPRESSED = 0x01
FLAG_END_STREAM = 0x02
HEADER_SIZE = 5
DEFAULT_MAX_FRAME = 64 * 1024 * 1024
_HEADER = struct.Struct(">BI")


class BadFrame(StrEnum):
    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    COMPRESSED = "compressed"
    UNKNOWN_FLAGS = "unknown_flags"


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
    """Incremental decoder: feed it chunks as they arrive, get whole frames back."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._poisoned: FrameTooLargeError | None = None

    @property
    def pending(self) -> int:
        """Bytes of an incomplete envelope held back."""
        return len(self._buf)

    def feed(self, chunk: bytes) -> list[Frame]:
        if self._poisoned is not None:
            raise self._poisoned
        self._buf += chunk
        frames: list[Frame] = []
        pos = 0
        buf = self._buf
        while len(buf) - pos >= HEADER_SIZE:
            flags, length = _HEADER.unpack_from(buf, pos)
            if length > self._max:
                # Cannot resynchronise. Hand out what was decoded; raise now or on the next call.
                self._poisoned = FrameTooLargeError(length, self._max)
                del buf[:pos]
                if frames:
                    return frames
                raise self._poisoned
            end = pos + HEADER_SIZE + length
            if end > len(buf):
                break
            frames.append(decode_payload(flags, bytes(buf[pos + HEADER_SIZE : end])))
            pos = end
        del buf[:pos]
        return frames

    def close(self) -> None:
        """End of input: raise TruncatedStreamError if a partial envelope is left over."""
        if self._poisoned is not None:
            raise self._poisoned
        if self._buf:
            raise TruncatedStreamError(len(self._buf))


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
