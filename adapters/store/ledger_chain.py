"""The decision ledger's records and how they are checked: canonical JSON, the hash chain, the signed
checkpoints, and the verifier that names exactly which record is broken and how.

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
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


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
    sig: str | None  # its own signature (None: a record from before records were signed)


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
        sig = record.get("sig")
        good.append(
            _Line(
                number,
                int(record["seq"]),
                str(record.get("prev")),
                str(record.get("hash")),
                sig if isinstance(sig, str) else None,
            )
        )
    report.records = len(lines)
    _order(good, report)
    _links(good, report)
    _checkpoints(good, checkpoints, public, report)
    report.head_seq = max((g.seq for g in good), default=0)
    return report


def _order(good: list[_Line], report: Report) -> None:
    """Missing, swapped or repeated records: each line's sequence against its place; a sequence
    before the first (0, negative) is no record a writer wrote."""
    for g in good:
        if g.seq < 1:
            report.problems.append(
                f"record {g.seq} (line {g.number}) is not a ledger record: sequences start at 1 (inserted)"
            )
    good[:] = [g for g in good if g.seq >= 1]
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
    """Each record's own signature (or, for a record from before records were signed, a validly signed
    checkpoint naming it); each checkpoint against the record it names, in order; the highest validly
    signed checkpoint against the tail (never the last line: checkpoints moved about prove nothing)."""
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
    if (parsed or any(g.sig is not None for g in good)) and public is None:
        report.problems.append("the ledger's public key is missing: its signatures cannot be checked")
        return
    checked: dict[tuple[int, str, bytes], bool] = {}

    def signed(seq: int, head: str, sig: bytes) -> bool:
        assert public is not None
        if (seq, head, sig) not in checked:
            try:
                public.verify(sig, signed_message(seq, head))
                checked[seq, head, sig] = True
            except (InvalidSignature, ValueError, TypeError):
                checked[seq, head, sig] = False
        return checked[seq, head, sig]

    newest, last = 0, 0
    vouched: set[int] = set()  # records a validly signed checkpoint names, hash and all
    for number, seq, head, sig in parsed:
        if not signed(seq, head, sig):
            report.problems.append(
                f"checkpoint line {number} (record {seq}) has a bad signature (changed or forged)"
            )
            continue
        if seq <= last:
            report.problems.append(
                f"checkpoint line {number} (record {seq}) is out of order: a checkpoint of record {last} "
                "comes before it (checkpoints moved)"
            )
        last, newest = max(last, seq), max(newest, seq)
        record = by_seq.get(seq)
        if record is None:
            continue
        if record.digest == head:
            vouched.add(seq)
        else:
            report.problems.append(
                f"record {seq} (line {record.number}) does not match its signed checkpoint (changed and "
                "its hash recomputed)"
            )
    for g in good:
        if g.sig is not None:
            try:
                ok = signed(g.seq, g.digest, b64u_dec(g.sig))
            except ValueError:
                ok = False
            if not ok:
                report.problems.append(
                    f"record {g.seq} (line {g.number}) has a bad signature (changed or forged without the key)"
                )
        elif g.seq not in vouched:
            report.problems.append(
                f"record {g.seq} (line {g.number}) is signed by nothing: no signature of its own, no "
                "checkpoint names it (added without the key: forged)"
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
        report.notes.append(
            f"record {top}, the newest, has no checkpoint yet (its writer was killed before writing it)"
        )
