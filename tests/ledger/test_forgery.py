"""Issue 46 item 7: forgeries made without the key and checkpoint games, through ``agy-harness audit
verify`` on a ledger the real file ledger wrote. Each failed before: a ``seq 0`` record inserted
before record 1 and a correctly chained, future-dated record appended at the end verified (and the
next writer's checkpoint then covered the forged one); a ledger cut back with a later checkpoint moved
to the end of ``checkpoints.jsonl`` verified; ``verify`` while a writer appends reported a false
"truncated tail" (the two files read at different moments); ``--ledger /nonexistent`` said it verifies."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from agy_harness.adapters.store import ledger_chain as C
from agy_harness.adapters.store.ledger_file import CHECKPOINTS, LEDGER, FileLedger
from agy_harness.composition.entrypoints.cli import main
from agy_harness.ports.protocols import LedgerEntry

from .helpers import records

RECORDS = 6


def write(directory: Path, n: int = RECORDS) -> None:
    ledger = FileLedger(directory)
    for i in range(n):
        body = {
            "gate_id": f"gate-{i}",
            "verdict": "allow",
            "decided_by": {"kind": "human", "surface": "board"},
        }
        ledger.record_now(LedgerEntry(type="decision", body=body))
    ledger.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    directory = tmp_path / "ledger"
    write(directory)
    return directory


def verify(capsys: pytest.CaptureFixture[str], directory: Path) -> tuple[int, str, str]:
    code = main(["audit", "verify", "--ledger", str(directory)])
    out, err = capsys.readouterr()
    return code, out, err


def forged(seq: int, prev: str, time: str = "2099-01-01T00:00:00.000Z") -> bytes:
    """A record made without the key: its hash right, chained to ``prev``, an allow by a human."""
    body = {"gate_id": "forged", "verdict": "allow", "decided_by": {"kind": "human", "surface": "board"}}
    line, _ = C.seal(seq, prev, time, "decision", body)
    return line


def test_a_seq_0_record_before_record_1_is_named(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ledger / LEDGER
    path.write_bytes(forged(0, C.GENESIS) + path.read_bytes())
    code, out, _ = verify(capsys, ledger)
    assert code == 1, out
    assert "BROKEN: record 0 (line 1) is not a ledger record: sequences start at 1 (inserted)" in out


def test_an_unsigned_record_appended_at_the_end_is_forged_and_stays_so(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ledger / LEDGER
    last = records(ledger)[-1]
    with path.open("ab") as f:
        f.write(forged(RECORDS + 1, last["hash"]))
    code, out, _ = verify(capsys, ledger)
    assert code == 1, out
    assert f"BROKEN: record {RECORDS + 1} (line {RECORDS + 1}) is signed by nothing" in out
    write(ledger, 1)  # the next writer chains after it and checkpoints its own record
    assert records(ledger)[-1]["seq"] == RECORDS + 2
    code, out, _ = verify(capsys, ledger)
    assert code == 1 and f"BROKEN: record {RECORDS + 1} (line {RECORDS + 1}) is signed by nothing" in out


def test_a_changed_signature_is_named(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ledger / LEDGER
    lines = path.read_bytes().splitlines(keepends=True)
    other = C.b64u(b"\x01" * 64)
    record = lines[2].decode()
    start = record.index('"sig":"') + len('"sig":"')
    lines[2] = (record[:start] + other + record[record.index('"', start) :]).encode()
    path.write_bytes(b"".join(lines))
    code, out, _ = verify(capsys, ledger)
    assert code == 1 and "BROKEN: record 3 (line 3) has a bad signature" in out


@pytest.mark.parametrize("moved", [3, 2])
def test_a_ledger_cut_back_with_a_checkpoint_moved_last_is_a_truncated_tail(
    ledger: Path, capsys: pytest.CaptureFixture[str], moved: int
) -> None:
    """Records 4..6 cut off; the checkpoint of record ``moved`` moved to the end of the checkpoints."""
    lines = (ledger / LEDGER).read_bytes().splitlines(keepends=True)
    (ledger / LEDGER).write_bytes(b"".join(lines[:3]))
    cps = (ledger / CHECKPOINTS).read_bytes().splitlines(keepends=True)
    (ledger / CHECKPOINTS).write_bytes(b"".join(cps[: moved - 1] + cps[moved:] + cps[moved - 1 : moved]))
    code, out, _ = verify(capsys, ledger)
    assert code == 1, out
    assert (
        f"BROKEN: truncated tail: the ledger ends at record 3, but a signed checkpoint covers record {RECORDS}"
        in out
    )
    assert f"BROKEN: checkpoint line {RECORDS} (record {moved}) is out of order" in out


def test_verify_while_a_writer_appends_sees_no_truncated_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both files are read under the writers' lock: never a checkpoint newer than the records read."""
    directory = tmp_path / "ledger"
    write(directory, 1)
    stop = threading.Event()

    def appending() -> None:
        ledger = FileLedger(directory)
        i = 0
        while not stop.wait(0.001):  # (a record a millisecond: a verify checks each one's signature)
            ledger.record_now(LedgerEntry(type="decision", body={"gate_id": f"g{i}", "verdict": "allow"}))
            i += 1
        ledger.close()

    writer = threading.Thread(target=appending)
    writer.start()
    try:
        results = [verify(capsys, directory) for _ in range(40)]
    finally:
        stop.set()
        writer.join()
    broken = [out for code, out, _ in results if code != 0]
    assert broken == [], broken[:1]


def test_a_record_written_between_verifys_two_reads_is_no_truncated_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race made certain: right after verify has read the records, another writer appends one (and
    its checkpoint) -- or tries to: under the lock it waits until verify has read both files."""
    from agy_harness.adapters.store import ledger_read
    from agy_harness.composition.root import audit_ledger

    directory = tmp_path / "ledger"
    write(directory, 2)
    real = ledger_read.read_file
    appended = threading.Event()

    def read_file(where: Path, name: str, limit: int = 1 << 31) -> bytes:
        data = real(where, name, limit)
        if name == LEDGER and not appended.is_set():
            threading.Thread(target=lambda: (write(where, 1), appended.set())).start()
            appended.wait(2.0)  # (a bound: under the lock the writer cannot append before verify read)
        return data

    monkeypatch.setattr(ledger_read, "read_file", read_file)
    monkeypatch.setattr(audit_ledger, "read_file", read_file, raising=False)
    code, out, _ = verify(capsys, directory)
    assert appended.wait(60)
    assert code == 0 and "truncated tail" not in out, out
    code, out, _ = verify(capsys, directory)
    assert code == 0 and "3 records" in out


def test_verify_where_there_is_no_ledger_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = verify(capsys, Path("/nonexistent"))
    assert (code, out) == (1, "")
    assert err == "agy-harness audit: there is no decision ledger at /nonexistent (no such directory)\n"
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    code, out, err = verify(capsys, empty)
    assert code == 1 and "there is no decision ledger at" in err and out == ""
    code = main(["audit", "export", "--format", "jsonl", "--ledger", "/nonexistent"])
    assert code == 1 and "there is no decision ledger" in capsys.readouterr().err


def test_verify_of_an_empty_ledger_says_it_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "ledger"
    write(directory, 1)
    for name in (LEDGER, CHECKPOINTS):
        (directory / name).write_bytes(b"")
    code, out, _ = verify(capsys, directory)
    assert (code, out) == (
        0,
        f"the decision ledger at {directory} is empty: no records yet, nothing to verify\n",
    )


def test_a_copy_keeps_verifying(ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ledger, copy)
    code, out, _ = verify(capsys, copy)
    assert code == 0 and f"{RECORDS} records, chained and signed" in out
