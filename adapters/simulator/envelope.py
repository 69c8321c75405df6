"""The server side of connect's stream envelopes: ``[flags:1][big-endian uint32 length:4][payload]``.

Deliberately separate from the client codec in ``adapters/rpc`` (the simulator must not share the code
it is used to test). ``decode_request`` reproduces connect-go's protocol errors word for word where the
harness depends on them (``promised N bytes in enveloped message``).
"""

from __future__ import annotations

import json
import struct
from typing import Any

FLAG_COMPRESSED = 0x01
FLAG_END_STREAM = 0x02
HEADER = struct.Struct(">BI")


class EnvelopeError(ValueError):
    """A request body that is not one well-formed envelope (connect code ``invalid_argument``)."""


def encode_raw(data: bytes, flag: int = 0) -> bytes:
    return HEADER.pack(flag, len(data)) + data


def encode(obj: Any, flag: int = 0) -> bytes:
    """One envelope carrying ``obj`` as compact UTF-8 JSON."""
    return encode_raw(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode(), flag)


def end_stream(error: dict[str, str] | None = None) -> bytes:
    """The end-of-stream trailer frame: ``{}`` or ``{"error": {"code", "message"}}``."""
    return encode({"error": error} if error else {}, FLAG_END_STREAM)


def decode_frames(buf: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """Whole envelopes in ``buf`` as ``(flags, payload)``, and the incomplete rest."""
    frames: list[tuple[int, bytes]] = []
    pos = 0
    while len(buf) - pos >= HEADER.size:
        flags, size = HEADER.unpack_from(buf, pos)
        if len(buf) - pos - HEADER.size < size:
            break
        start = pos + HEADER.size
        frames.append((flags, bytes(buf[start : start + size])))
        pos = start + size
    return frames, bytes(buf[pos:])


def decode_request(body: bytes) -> dict[str, Any]:
    """The single JSON object of a server-stream request body, or :class:`EnvelopeError`."""
    if len(body) < HEADER.size:
        raise EnvelopeError(f"protocol error: incomplete envelope: unexpected EOF (got {len(body)} bytes)")
    flags, size = HEADER.unpack_from(body, 0)
    got = len(body) - HEADER.size
    if got < size:
        raise EnvelopeError(f"protocol error: promised {size} bytes in enveloped message, got {got} bytes")
    if flags & FLAG_COMPRESSED:
        raise EnvelopeError("protocol error: received compressed message without a negotiated compression")
    try:
        value = json.loads(body[HEADER.size : HEADER.size + size] or b"{}")
    except ValueError as exc:
        raise EnvelopeError(f"unmarshal into request: {exc}") from exc
    if not isinstance(value, dict):
        raise EnvelopeError("unmarshal into request: not a JSON object")
    return value
