"""The decision ledger's records and how they are checked: canonical JSON, the hash chain, the signed
checkpoints, and each record read back (the verifier that names exactly which record is broken and
how is :mod:`.ledger_verify`).

A record is one line of RFC 8785 canonical JSON (the ``rfc8785`` package)::

    {"body":{...},"hash":H,"prev":P,"seq":N,"sig":S,"time":"2026-12-04T14:02:11.123Z","type":"decision"}

``hash`` is the SHA-256 (hex) of the canonical JSON of the record without ``hash`` and ``sig``;
``prev`` is the previous record's ``hash`` (64 zeros for the first); ``seq`` counts from 1. ``sig``
is the install's Ed25519 signature (base64url) over the canonical JSON of ``{"head":H,"sequence":N}``:
each record is signed where it is written, so a record appended without the key is named as forged
wherever it stands -- the last one too, which a hash chain alone cannot tell from a record whose
checkpoint a kill prevented. A checkpoint (its own file) is ``{"head":H,"key":K,"sequence":N,"sig":S}``
(the same signature, key id ``K``), written after its record, so a tail cut off after a checkpoint is
detected, not only an edit. Records written before ``sig`` existed have none: each is then held to a
validly signed checkpoint naming it (their writers wrote one per record). Values are strings, integers (within ±2^53), booleans, null, lists and
objects -- never floats (AAT's reference verifier refuses them); :func:`clean` makes any value so.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

GENESIS = "0" * 64
SAFE_INT = 2**53 - 1
MAX_TEXT = 4096  # a string kept in a record (longer ones are cut, with their length said)
#: a record's line, bytes (longer ones are shortened, with a mark): well under what a writer catching up
#: reads back (ledger_file.TAIL_READ), so the last record is always read whole, never taken for torn
MAX_RECORD = 256 << 10


def clean(value: Any, depth: int = 0) -> Any:
    """``value`` as the ledger keeps it: JSON with text that is valid Unicode (a lone surrogate
    becomes U+FFFD), bounded strings, integers in the safe range (else their decimal text), no
    floats (their repr text), at most 16 levels deep."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -SAFE_INT <= value <= SAFE_INT else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        text = value.encode("utf-8", "replace").decode("utf-8") if not value.isascii() else value
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + f"… [{len(value)} chars]"
        return text
    if depth >= 16:
        return "…"
    if isinstance(value, dict):
        return {str(clean(k, depth + 1)): clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, depth + 1) for v in value]
    return clean(str(value), depth)


def canonical(value: Any) -> bytes:
    """RFC 8785 canonical JSON of ``value`` (already :func:`clean`)."""
    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def seal(
    seq: int, prev: str, time: str, kind: str, body: dict[str, Any], private: Ed25519PrivateKey | None = None
) -> tuple[bytes, str]:
    """The record's line (canonical JSON and a newline, signed with ``private`` when given) and its
    hash. A line over :data:`MAX_RECORD` bytes is never written: its body is shortened
    (:func:`shortened`), with ``record_cut`` saying so."""
    line, digest, _sig = sealed(seq, prev, time, kind, body, private)
    return line, digest


def sealed(
    seq: int, prev: str, time: str, kind: str, body: dict[str, Any], private: Ed25519PrivateKey | None
) -> tuple[bytes, str, str]:
    """:func:`seal`, and the record's signature ("" without a key): its checkpoint's too."""
    kept = clean(body)
    line, digest, sig = _sealed(seq, prev, time, kind, kept, private)
    if len(line) <= MAX_RECORD:
        return line, digest, sig
    for short in shortened(kept, len(line)):
        line, digest, sig = _sealed(seq, prev, time, kind, short, private)
        if len(line) <= MAX_RECORD:
            break
    return line, digest, sig


def signed_message(seq: int, head: str) -> bytes:
    """What a record's ``sig`` and a checkpoint's sign: ``{"head":H,"sequence":N}``, canonical."""
    return b'{"head":' + _fast(head) + b',"sequence":' + str(seq).encode() + b"}"


def _sealed(
    seq: int, prev: str, time: str, kind: str, body: Any, private: Ed25519PrivateKey | None
) -> tuple[bytes, str, str]:
    record: dict[str, Any] = {"body": body, "prev": prev, "seq": seq, "time": time, "type": kind}
    digest = sha256_hex(_canonical_clean(record))
    record["hash"] = digest
    sig = ""
    if private is not None:
        sig = record["sig"] = b64u(private.sign(signed_message(seq, digest)))
    return _canonical_clean(record) + b"\n", digest, sig


def _canonical_clean(value: Any) -> bytes:
    """:func:`canonical` of a :func:`clean` value, fast: json's C encoder (sorted, compact, UTF-8)
    writes RFC 8785's very bytes when its output is ASCII -- integers only (no floats), the same
    escapes (the two-character ones, else ``\\u00xx`` below 0x20), keys sorted alike (for ASCII,
    code points and UTF-16 units agree). Where the output is not ASCII (keys beyond the BMP sort
    otherwise), the ``rfc8785`` package writes it. (It cut sealing a decision record from ~190 µs
    to ~60 µs; ``tests/ledger/test_canonical.py`` compares the two.)"""
    fast = _fast(value)
    return fast if fast.isascii() else canonical(value)


def shortened(body: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """``body`` (already :func:`clean`) made smaller, harder and harder, each with a ``record_cut``
    mark: its lists and objects cut to their first items and strings cut (each cut saying what it
    held); last, only its short top-level scalars -- small whatever ``body`` was."""
    mark = f"… [a record of {size} bytes, over the {MAX_RECORD}-byte bound: shortened]"
    out = [{**_cut(body, items, text), "record_cut": mark} for items, text in ((64, 1024), (8, 128))]
    scalars = [
        (k, v)
        for k, v in body.items()
        if len(k) <= 64 and (v is None or isinstance(v, bool | int) or (isinstance(v, str) and len(v) <= 256))
    ]
    out.append({**dict(scalars[:32]), "record_cut": mark})
    return out


def _cut(value: Any, items: int, text: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= text else value[:text] + f"… [{len(value)} chars]"
    if isinstance(value, list):
        kept = [_cut(v, items, text) for v in value[:items]]
        return kept if len(value) <= items else [*kept, f"… [{len(value)} items]"]
    if isinstance(value, dict):
        pairs = list(value.items())
        kept_pairs = {_cut(k, items, text): _cut(v, items, text) for k, v in pairs[:items]}
        if len(pairs) > items:
            kept_pairs["…"] = f"[{len(pairs)} keys]"
        return kept_pairs
    return value


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_dec(text: str) -> bytes:
    """``text`` decoded, only where it is the one encoding :func:`b64u` makes of its bytes (ValueError
    else): Python's decoder takes '/' and '+' for '_' and '-' and ignores a last character's unused
    bits, so a changed byte of a signature could still verify (tests/ledger/test_tamper.py)."""
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64u(data) != text:
        raise ValueError("not the canonical base64url of its bytes")
    return data


def key_id(public: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return sha256_hex(raw)[:16]


def checkpoint(seq: int, head: str, private: Ed25519PrivateKey, sig: str = "", key: str = "") -> bytes:
    """A signed checkpoint line for record ``seq`` whose hash is ``head`` (``sig``: the record's own
    signature, the same message; ``key``: the key's id, when the caller has them)."""
    sig = sig or b64u(private.sign(signed_message(seq, head)))
    line = {"head": head, "key": key or key_id(private.public_key()), "sequence": seq, "sig": sig}
    return _canonical_clean(line) + b"\n"


# -- reading a record back (the verifier is ledger_verify.py) ----------------------------------


def _fast(value: Any) -> bytes:
    """json's C encoder, sorted and compact: RFC 8785's bytes for what the ledger writes (ASCII keys,
    no floats); anything else is checked with :func:`canonical`."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_record(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """The record on a line, and "" if it is intact; else None or the record, and how it is broken."""
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, "unreadable (not a JSON record: changed or damaged)"
    if not isinstance(record, dict) or not isinstance(record.get("seq"), int) or "hash" not in record:
        return None, "unreadable (not a ledger record)"
    claimed = record["hash"]
    try:
        fast = _fast(record) == raw  # (json's encoder gives RFC 8785's bytes for what a writer wrote)
        if not fast and canonical(record) != raw:
            return record, "changed (not its canonical form)"
    except (rfc8785.CanonicalizationError, TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return record, "changed (not canonical JSON)"
    sig = record.get("sig")
    if not isinstance(claimed, str) or not (sig is None or isinstance(sig, str)):
        return record, "changed (its hash or signature is malformed)"
    unsealed = {k: v for k, v in record.items() if k not in ("hash", "sig")}
    try:
        content = _fast(unsealed) if fast else canonical(unsealed)
    except (rfc8785.CanonicalizationError, TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return record, "changed (not canonical JSON)"
    if sha256_hex(content) != claimed:  # the canonical record without its hash and signature
        return record, "changed (its content does not match its hash)"
    return record, ""


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines, and the torn rest after the last newline (b"" when none)."""
    end = data.rfind(b"\n")
    if end < 0:
        return [], data
    return data[:end].split(b"\n"), data[end + 1 :]
