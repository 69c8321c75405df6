"""The board's history of a conversation reads a bounded tail of the decision ledger, never the whole
file, however large the ledger has grown (each board request pays for it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agy_harness.adapters.store.ledger_file import LEDGER, FileLedger
from agy_harness.composition.root import audit_ledger
from agy_harness.ports.protocols import LedgerEntry


def test_history_reads_a_bounded_tail_of_a_large_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "ledger"
    directory.mkdir(mode=0o700)
    old = b"x" * 1023 + b"\n"  # older lines (another conversation's, say): 9 MiB of them
    fd = os.open(directory / LEDGER, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(old * (9 * 1024))
    ledger = FileLedger(directory)
    try:
        for n in range(3):
            body = {"conversation": "c", "gate_id": f"g{n}", "verdict": "allow", "scope": "once",
                    "shown": f"run_command: ls {n}", "decided_by": {"kind": "human", "surface": "board"}}  # fmt: skip
            ledger.record_now(LedgerEntry(type="decision", body=body))
    finally:
        ledger.close()

    def whole(*_a: object, **_k: object) -> bytes:
        raise AssertionError("the whole ledger was read for a history view")

    monkeypatch.setattr(audit_ledger, "read_file", whole)
    rows = audit_ledger.conversation_history("c", directory)
    assert [r["gate_id"] for r in rows] == ["g2", "g1", "g0"]
    assert rows[0]["shown"] == "run_command: ls 2" and rows[0]["surface"] == "board"
    assert audit_ledger.conversation_history("other", directory) == []
