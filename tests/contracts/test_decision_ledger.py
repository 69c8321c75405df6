"""The DecisionLedger port's contract (ports/protocols.py), over its adapter: the file ledger.
(The ledger tests' ``BrokenLedger`` is a failure injection, not a fake: it only raises.)"""

from __future__ import annotations

from pathlib import Path

from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.ports.protocols import DecisionLedger, LedgerEntry


def _decision(gate_id: str, **extra: object) -> LedgerEntry:
    return LedgerEntry(type="decision", body={"gate_id": gate_id, "verdict": "allow", **extra})


async def test_records_get_increasing_sequences_and_agys_own_answer_is_not_recorded_twice(tmp_path: Path) -> None:
    ledger: DecisionLedger = FileLedger(tmp_path / "ledger")
    first = await ledger.record(_decision("g-1"))
    second = await ledger.record(LedgerEntry(type="delivery", body={"gate_id": "g-1", "taken": True}))
    assert 0 < first < second
    # a decision "unless decided" (agy's terminal, as the stream showed it) for a decided gate: skipped
    assert await ledger.record(_decision("g-1", unless_decided=True)) == 0
    third = await ledger.record(_decision("g-2", unless_decided=True))
    assert third > second
