"""The decision ledger for ``agy-harness audit`` (the entry point reads adapters only through the
root): where it lives, its records and verification report, and its export as an Agent Audit Trail."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from agy_harness.adapters.store import ledger_aat as A
from agy_harness.adapters.store import ledger_chain as C
from agy_harness.adapters.store import ledger_verify as V
from agy_harness.adapters.store.ledger_file import (
    CHECKPOINTS,
    LEDGER,
    default_dir,
    load_keys,
)
from agy_harness.adapters.store.ledger_place import moved_once
from agy_harness.adapters.store.ledger_read import read_both, read_file, read_tail

Report = V.Report
log = logging.getLogger("agy_harness.ledger")

__all__ = ["Report", "aat_trail", "conversation_history", "default_dir", "found", "kind_tally", "load", "this_install"]


def this_install() -> Path:
    """This install's ledger directory, an earlier version's ledger moved into it first (once)."""
    where = default_dir()
    moved_once(where)
    return where


def found(directory: Path) -> bool:
    """Whether ``directory`` holds a decision ledger (either of its files; a symlink is not one)."""
    return any(
        (directory / name).is_file() or (directory / name).is_symlink() for name in (LEDGER, CHECKPOINTS)
    )


def load(directory: Path) -> tuple[list[dict[str, Any]], V.Report]:
    """The intact records of the ledger in ``directory`` and what :func:`ledger_verify.verify` found;
    both files read under the writers' lock (never between a record and its checkpoint)."""
    if not directory.exists():
        return [], V.Report()
    _, public = load_keys(directory, create=False)
    data, checkpoints = read_both(directory)
    report = V.verify(data, checkpoints, public)
    lines, _ = C.split_lines(data)
    records = [r for r, broken in map(C.parse_record, lines) if r is not None and not broken]
    return records, report


def aat_trail(
    directory: Path, records: list[dict[str, Any]], version: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The AAT records of ``records`` and the keystore that verifies them (see ``ledger_aat``)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    _, public = load_keys(directory, create=False)
    ledger_key = C.key_id(public) if public is not None else ""
    checkpoint = None
    lines, _ = C.split_lines(read_file(directory, CHECKPOINTS))
    if lines and public is not None:
        checkpoint = json.loads(lines[-1])
        checkpoint["public_key"] = C.b64u(public.public_bytes(Encoding.Raw, PublicFormat.Raw))
    key = A.export_key(directory)
    return list(A.trail(records, checkpoint, ledger_key, version, key)), A.keystore(key)


HISTORY_ROWS = 200  # a conversation's newest decisions the board's history shows
HISTORY_BYTES = 8 << 20  # the ledger's tail the history reads (a request never reads the whole ledger)


def conversation_history(
    cascade_id: str, directory: Path | None = None, limit: int = HISTORY_ROWS
) -> list[dict[str, Any]]:
    """The decisions of conversation ``cascade_id`` in this install's ledger, newest first (the
    board's history view): when, what was asked (the ledger's redacted rendering), the verdict and
    scope, who decided and where (``decided``: the one line every surface shows), whether agy took it,
    and ``ran``: what its outcome record says ran where that differs from what was shown or approved
    (``core.decision_record.ran_note``, the words ``agy-harness audit`` prints; "" otherwise).
    Only the ledger's last :data:`HISTORY_BYTES` are read: each board request costs a bounded read."""
    from agy_harness.core.decided_line import decided_line
    from agy_harness.core.decision_record import ran_note
    from agy_harness.core.display import one_line
    from agy_harness.ports.events import Decider

    if directory is None:
        try:
            where = this_install()
        except OSError as exc:  # (the move failed: said in the log; the history reads what is here)
            log.warning("decision ledger: %s", exc)
            where = default_dir()
    else:
        where = directory
    if not where.exists():
        return []
    data, _whole = read_tail(where, LEDGER, HISTORY_BYTES)  # (``audit verify`` reads it whole)
    lines, _torn = C.split_lines(data)
    records = [r for r, broken in map(C.parse_record, lines) if r is not None and not broken]
    taken: dict[int, bool] = {}
    outcomes: dict[int, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for record in records:
        body = record.get("body")
        if not isinstance(body, dict) or body.get("conversation") != cascade_id:
            continue
        if record.get("type") == "delivery" and isinstance(body.get("decision"), int):
            taken[body["decision"]] = body.get("taken") is True
        if record.get("type") == "outcome" and isinstance(body.get("decision"), int):
            outcomes[body["decision"]] = body
        if record.get("type") != "decision":
            continue
        found = body.get("decided_by")
        by: dict[str, Any] = found if isinstance(found, dict) else {}
        verdict, scope = str(body.get("verdict", "")), str(body.get("scope", ""))
        decider = Decider(
            kind=str(by.get("kind", "")),
            surface=str(by.get("surface", "")),
            user=str(by.get("user", "")),
            rule_id=str(by.get("rule_id", "")),
            at=str(record.get("time", "")),
            verdict="" if by.get("kind") == "agy-terminal" else verdict,
            scope=scope,
        )
        rows.append(
            {
                "seq": record.get("seq"),
                "time": str(record.get("time", "")),
                "gate_id": str(body.get("gate_id", "")),
                "shown": str(body.get("shown", "")),
                "verdict": verdict,
                "scope": scope,
                "kind": decider.kind,
                "surface": decider.surface,
                "user": decider.user,
                "decided": decided_line(decider),
            }
        )
    for row in rows:
        seq = row["seq"] if isinstance(row["seq"], int) else None
        row["taken"] = taken.get(seq) if seq is not None else None
        row["ran"] = one_line(ran_note(row["verdict"], outcomes.get(seq) if seq is not None else None))
    rows.sort(key=lambda r: r["seq"] if isinstance(r["seq"], int) else -1, reverse=True)
    return rows[:limit]


def kind_tally(directory: Path | None = None, conversation: str = "") -> dict[str, dict[str, int]]:
    """Per gate kind, how many answers agy took and refused, from this install's ledger (its last
    :data:`HISTORY_BYTES`; ``conversation``: only its): :func:`agy_harness.core.kind_tally.tally`.
    An unreadable or absent ledger tallies nothing."""
    from agy_harness.core.kind_tally import tally

    where = directory or default_dir()
    if not where.exists():
        return {}
    try:
        data, _whole = read_tail(where, LEDGER, HISTORY_BYTES)
    except OSError:
        return {}
    lines, _torn = C.split_lines(data)
    return tally(
        (r for r, broken in map(C.parse_record, lines) if r is not None and not broken), conversation
    )
