"""The decision ledger's records and how they are checked: canonical JSON, the hash chain, the signed
checkpoints, and the verifier that names exactly which record is broken and how.

A record is one line of RFC 8785 canonical JSON (the ``rfc8785`` package)::

    {"body":{...},"hash":H,"prev":P,"seq":N,"time":"2026-12-04T14:02:11.123Z","type":"decision"}

``hash`` is the SHA-256 (hex) of the canonical JSON of the record without ``hash``; ``prev`` is the
previous record's ``hash`` (64 zeros for the first); ``seq`` counts from 1. A checkpoint (its own
file) is ``{"head":H,"key":K,"sequence":N,"sig":S}``: an Ed25519 signature (base64url ``S``, key id
``K``) over the canonical JSON of ``{"head":H,"sequence":N}``, so a tail cut off after a checkpoint is
detected, not only an edit. Values are strings, integers (within ±2^53), booleans, null, lists and
objects -- never floats (AAT's reference verifier refuses them); :func:`clean` makes any value so.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
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


def seal(seq: int, prev: str, time: str, kind: str, body: dict[str, Any]) -> tuple[bytes, str]:
    """The record's line (canonical JSON and a newline) and its hash. A line over :data:`MAX_RECORD`
    bytes is never written: its body is shortened (:func:`shortened`), with ``record_cut`` saying so."""
    kept = clean(body)
    line, digest = _sealed(seq, prev, time, kind, kept)
    if len(line) <= MAX_RECORD:
        return line, digest
    for short in shortened(kept, len(line)):
        line, digest = _sealed(seq, prev, time, kind, short)
        if len(line) <= MAX_RECORD:
            break
    return line, digest


def _sealed(seq: int, prev: str, time: str, kind: str, body: Any) -> tuple[bytes, str]:
    record: dict[str, Any] = {"body": body, "prev": prev, "seq": seq, "time": time, "type": kind}
    digest = sha256_hex(canonical(record))
    record["hash"] = digest
    return canonical(record) + b"\n", digest


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
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id(public: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return sha256_hex(raw)[:16]


def checkpoint(seq: int, head: str, private: Ed25519PrivateKey) -> bytes:
    """A signed checkpoint line for record ``seq`` whose hash is ``head``."""
    signature = private.sign(canonical({"head": head, "sequence": seq}))
    line = {"head": head, "key": key_id(private.public_key()), "sequence": seq, "sig": b64u(signature)}
    return canonical(line) + b"\n"


# -- verifying -----------------------------------------------------------------------------------


@dataclass
class Report:
    """What :func:`verify` found: ``problems`` (each names the record and how it is broken; empty:
    the ledger verifies), ``notes`` (harmless: a torn final line a kill left), the records read."""

    records: int = 0
    checkpoints: int = 0
    head_seq: int = 0
    signed_seq: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class _Line:
    number: int
    seq: int
    prev: str
    digest: str


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
        if _fast(record) != raw and canonical(record) != raw:
            return record, "changed (not its canonical form)"
    except (rfc8785.CanonicalizationError, TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return record, "changed (not canonical JSON)"
    member = b'"hash":' + _fast(claimed) + b","
    if not isinstance(claimed, str) or raw.count(member) != 1:
        return record, "changed (its hash is malformed)"
    if sha256_hex(raw.replace(member, b"", 1)) != claimed:  # the canonical record without its hash
        return record, "changed (its content does not match its hash)"
    return record, ""


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines, and the torn rest after the last newline (b"" when none)."""
    end = data.rfind(b"\n")
    if end < 0:
        return [], data
    return data[:end].split(b"\n"), data[end + 1 :]


def verify(data: bytes, checkpoints: bytes, public: Ed25519PublicKey | None) -> Report:
    """Check a ledger's bytes against its checkpoints (see the module doc); never raises."""
    report = Report()
    lines, torn = split_lines(data)
    if torn:
        report.notes.append(
            f"a torn final line ({len(torn)} bytes, a write cut off by a kill) is not a record; ignored"
        )
    good: list[_Line] = []
    for number, raw in enumerate(lines, 1):
        record, broken = parse_record(raw)
        where = f"line {number}" if record is None else f"record {record['seq']} (line {number})"
        if broken:
            report.problems.append(f"{where} is {broken}")
        if record is None:
            continue
        good.append(_Line(number, int(record["seq"]), str(record.get("prev")), str(record.get("hash"))))
    report.records = len(lines)
    _order(good, report)
    _links(good, report)
    _checkpoints(good, checkpoints, public, report)
    report.head_seq = max((g.seq for g in good), default=0)
    return report


def _order(good: list[_Line], report: Report) -> None:
    """Missing, swapped or repeated records: each line's sequence against its place."""
    seen: set[int] = set()
    for g in good:
        if g.seq in seen:
            report.problems.append(f"record {g.seq} (line {g.number}) is repeated (a copy was inserted)")
        seen.add(g.seq)
    expected = sorted(g.seq for g in good)
    misplaced = [g for g, want in zip(good, expected, strict=True) if g.seq != want]
    if len(misplaced) == 2:
        x, y = sorted(misplaced, key=lambda g: g.seq)
        report.problems.append(
            f"records {x.seq} and {y.seq} are swapped: record {x.seq} is on line {x.number}, "
            f"record {y.seq} on line {y.number}"
        )
    elif misplaced:
        where = ", ".join(f"record {g.seq} on line {g.number}" for g in misplaced[:10])
        report.problems.append(f"records are out of order (moved): {where}")
    top = expected[-1] if expected else 0
    gaps = sorted(set(range(1, top + 1)) - seen)
    for seq in gaps[:20]:
        report.problems.append(f"record {seq} is missing (deleted): the ledger holds records up to {top}")
    if len(gaps) > 20:
        report.problems.append(f"... and {len(gaps) - 20} more records missing")


def _links(good: list[_Line], report: Report) -> None:
    """Each record names the hash of the record before it."""
    by_seq = {g.seq: g for g in good}
    for g in good:
        if g.seq == 1:
            if g.prev != GENESIS:
                report.problems.append(f"record 1 (line {g.number}) is changed (it names a record before it)")
            continue
        before = by_seq.get(g.seq - 1)
        if before is not None and before.digest != g.prev:
            report.problems.append(
                f"record {g.seq} (line {g.number}) does not chain to record {before.seq} (line "
                f"{before.number}): one of them was changed and its hash recomputed"
            )


def _checkpoints(good: list[_Line], data: bytes, public: Ed25519PublicKey | None, report: Report) -> None:
    """Each checkpoint against the record it names; the newest validly signed one against the tail.
    A signature is checked where it matters (a checkpoint that disagrees with the chain, and the
    newest): one that agrees with the chain proves nothing more by being signed."""
    lines, _torn = split_lines(data)
    by_seq = {g.seq: g for g in good}
    top = max(by_seq, default=0)
    parsed: list[tuple[int, int, str, bytes]] = []
    for number, raw in enumerate(lines, 1):
        try:
            cp = json.loads(raw)
            parsed.append((number, int(cp["sequence"]), str(cp["head"]), b64u_dec(str(cp["sig"]))))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError):
            report.problems.append(f"checkpoint line {number} is unreadable (changed or damaged)")
    if parsed and public is None:
        report.problems.append("the ledger's public key is missing: its checkpoints cannot be checked")
        return

    def signed(seq: int, head: str, sig: bytes) -> bool:
        assert public is not None
        try:
            public.verify(sig, canonical({"head": head, "sequence": seq}))
            return True
        except (InvalidSignature, ValueError):
            return False

    newest = 0
    for number, seq, head, sig in reversed(parsed):
        if signed(seq, head, sig):
            newest = seq
            break
        report.problems.append(
            f"checkpoint line {number} (record {seq}) has a bad signature (changed or forged)"
        )
    for number, seq, head, sig in parsed:
        record = by_seq.get(seq)
        if record is None or record.digest == head:
            continue
        if signed(seq, head, sig):
            report.problems.append(
                f"record {seq} (line {record.number}) does not match its signed checkpoint (changed and "
                "its hash recomputed)"
            )
        else:
            report.problems.append(
                f"checkpoint line {number} (record {seq}) has a bad signature (changed or forged)"
            )
    report.checkpoints = len(parsed)
    report.signed_seq = newest
    if newest > top:
        report.problems.append(
            f"truncated tail: the ledger ends at record {top}, but a signed checkpoint covers record "
            f"{newest}: records {top + 1}..{newest} were cut off"
        )
    elif top - newest > 1:
        report.problems.append(
            f"records {newest + 1}..{top} are covered by no signed checkpoint (checkpoints removed or cut off)"
        )
    elif top > newest:
        report.notes.append(f"record {top}, the newest, is not signed yet (a kill before its checkpoint)")
