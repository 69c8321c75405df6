"""The decision ledger for ``agy-harness audit`` (the entry point reads adapters only through the
root): where it lives, its records and verification report, and its export as an Agent Audit Trail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agy_harness.adapters.store import ledger_aat as A
from agy_harness.adapters.store import ledger_chain as C
from agy_harness.adapters.store.ledger_file import CHECKPOINTS, LEDGER, default_dir, load_keys, read_file

Report = C.Report

__all__ = ["Report", "aat_trail", "default_dir", "load"]


def load(directory: Path) -> tuple[list[dict[str, Any]], C.Report]:
    """The intact records of the ledger in ``directory`` and what :func:`ledger_chain.verify` found."""
    if not directory.exists():
        return [], C.Report()
    _, public = load_keys(directory, create=False)
    data = read_file(directory, LEDGER)
    report = C.verify(data, read_file(directory, CHECKPOINTS), public)
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
