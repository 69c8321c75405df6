"""Reading a test's ledger back: its records (parsed) and whether it verifies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agy_harness.adapters.store import ledger_verify as V
from agy_harness.adapters.store.ledger_file import CHECKPOINTS, LEDGER, load_keys
from agy_harness.adapters.store.ledger_read import read_file


def records(directory: Path, kind: str | None = None) -> list[dict[str, Any]]:
    data = read_file(directory, LEDGER)
    whole = data.split(b"\n")[:-1]  # whole lines: a torn last one (a killed writer's) is no record
    out = [json.loads(line) for line in whole if line.strip()]
    return [r for r in out if kind is None or r["type"] == kind]


def decisions(directory: Path, gate_id: str | None = None) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in records(directory, "decision")
        if gate_id is None or r["body"]["gate_id"] == gate_id
    ]


def verified(directory: Path) -> V.Report:
    _, public = load_keys(directory, create=False)
    return V.verify(read_file(directory, LEDGER), read_file(directory, CHECKPOINTS), public)
