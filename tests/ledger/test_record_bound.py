"""A record's size is bounded where it is written (ledger_chain.MAX_RECORD): a body whose line would
be longer (many strings in a list: each string is bounded, the list was not) is shortened with a
``record_cut`` mark, never written whole -- a writer catching up reads back only the ledger's last
TAIL_READ bytes, and a longer record was not read: the next record was chained to the wrong head."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agy_harness.adapters.store import ledger_chain as C
from agy_harness.adapters.store import ledger_verify as V
from agy_harness.adapters.store.ledger_file import CHECKPOINTS, LEDGER, FileLedger, load_keys, now
from agy_harness.adapters.store.ledger_read import read_file
from agy_harness.ports.protocols import LedgerEntry

KEY = Ed25519PrivateKey.generate()  # (a writer signs each record: its line is measured signed)


def body_of_line(size: int) -> dict[str, Any]:
    """A decision body whose record (seq 1, the first) is exactly ``size`` bytes long."""
    body: dict[str, Any] = {"gate_id": "gate-1", "options": ["x" * 4000] * (size // 4010), "pad": ""}
    short = size - len(C.seal(1, C.GENESIS, now(), "decision", body, KEY)[0])
    assert short >= 0
    body["pad"] = "p" * short
    assert len(C.seal(1, C.GENESIS, now(), "decision", body, KEY)[0]) == size
    return body


def write(directory: Path, body: dict[str, Any]) -> list[dict[str, Any]]:
    """``body``, then a second record by another writer (another session catching up): the records."""
    first = FileLedger(directory)
    first.record_now(LedgerEntry(type="decision", body=body))
    first.close()
    other = FileLedger(directory)
    other.record_now(LedgerEntry(type="decision", body={"gate_id": "gate-2"}))
    other.close()
    data = read_file(directory, LEDGER)
    _, public = load_keys(directory, create=False)
    report = V.verify(data, read_file(directory, CHECKPOINTS), public)
    assert report.ok, report.problems
    lines = data.split(b"\n")[:-1]
    assert all(len(line) + 1 <= C.MAX_RECORD for line in lines)
    return [C.parse_record(line)[0] for line in lines]  # type: ignore[misc]


def test_a_record_at_the_bound_is_kept_whole(tmp_path: Path) -> None:
    body = body_of_line(C.MAX_RECORD)
    first, second = write(tmp_path / "ledger", body)
    assert first["body"] == body and "record_cut" not in first["body"]
    assert (first["seq"], second["seq"], second["prev"]) == (1, 2, first["hash"])


def test_a_record_one_byte_over_is_shortened_with_a_mark(tmp_path: Path) -> None:
    body = body_of_line(C.MAX_RECORD)
    body["pad"] += "p"  # one byte more (ASCII): a line of MAX_RECORD + 1 bytes
    first, second = write(tmp_path / "ledger", body)
    kept = first["body"]
    assert kept["record_cut"].startswith(f"… [a record of {C.MAX_RECORD + 1} bytes, over the")
    assert kept["gate_id"] == "gate-1" and kept["options"][-1] == f"… [{len(body['options'])} items]"
    assert (first["seq"], second["seq"], second["prev"]) == (1, 2, first["hash"])


def test_a_record_over_a_mebibyte_is_shortened_and_the_next_chains_to_it(tmp_path: Path) -> None:
    """What the reviewer saw: 300 strings of 4000 characters (1.2 MB) in one list."""
    body = {"gate_id": "gate-1", "options": [f"{i:04d}" + "o" * 3996 for i in range(300)]}
    first, second = write(tmp_path / "ledger", body)
    assert "record_cut" in first["body"] and first["body"]["gate_id"] == "gate-1"
    assert (first["seq"], second["seq"], second["prev"]) == (1, 2, first["hash"])


def test_a_body_of_many_keys_is_still_bounded() -> None:
    body = {f"k{i}": {f"j{j}": "v" * 200 for j in range(200)} for i in range(200)}
    line, _ = C.seal(1, C.GENESIS, now(), "decision", body)
    assert len(line) <= C.MAX_RECORD and b"record_cut" in line
