"""The decision ledger's verifier: a ledger's bytes checked against its checkpoints and its key (the
record format and the chain are :mod:`.ledger_chain`'s doc), naming exactly which record is broken and
how -- missing, swapped, repeated, changed, forged, a cut-off tail -- and never raising."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .ledger_chain import GENESIS, b64u_dec, parse_record, signed_message, split_lines


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
