"""Issue 46 item 10, what the benchmark's 2.8x came from, as behaviour: a record waited behind the
fsync of the records before it (the fsync ran on the writer thread, in the records' queue), and every
record crossed to that thread and back. Now the fsync runs on a thread of its own -- a record is
written while an fsync is still in progress, and the fsync still follows every record (durability as
the README promises it: a record is in the file before ``record`` returns, flushed right after) --
and a record whose lock is free is written at once, on the caller's thread. Both failed before."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agy_harness.adapters.store import ledger_file
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.ports.protocols import LedgerEntry

from .helpers import records, verified

BOUND = 60.0  # seconds: a liveness bound (a record that waits for the blocked fsync never comes)


def entry(n: int) -> LedgerEntry:
    return LedgerEntry(type="decision", body={"gate_id": f"gate-{n}", "verdict": "allow"})


def test_a_record_never_waits_behind_an_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = FileLedger(tmp_path / "ledger")
    ledger.record_now(entry(0))  # (the files opened)
    flushing, release = threading.Event(), threading.Event()
    flushed: list[int] = []  # the ledger's size at each fsync of the ledger file
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        if ledger._fds is not None and fd == ledger._fds[1]:
            flushing.set()
            assert release.wait(BOUND)
            flushed.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(ledger_file.os, "fsync", slow_fsync)
    ledger.record_now(entry(1))
    assert flushing.wait(BOUND)  # the disk is busy flushing record 1
    done = threading.Event()
    writer = threading.Thread(target=lambda: (ledger.record_now(entry(2)), done.set()))
    writer.start()
    try:
        assert done.wait(BOUND), "record 2 waited for the fsync of record 1"
    finally:
        release.set()
        writer.join()
    ledger.close()
    size = (tmp_path / "ledger" / "ledger.jsonl").stat().st_size
    assert flushed and flushed[-1] == size  # the last fsync came after the last record
    assert [r["seq"] for r in records(tmp_path / "ledger")] == [1, 2, 3] and verified(tmp_path / "ledger").ok


def test_a_record_is_written_on_the_callers_thread_when_the_lock_is_free(tmp_path: Path) -> None:
    """``record`` on the event loop: with the writer thread stopped, a record still gets written (the
    hand-over to that thread is what cost the answer its milliseconds); a first record, which opens the
    files, and a record the lock holds back are the writer thread's (its own test below)."""
    ledger = FileLedger(tmp_path / "ledger")
    ledger.record_now(entry(0))
    stopped, release = threading.Event(), threading.Event()
    ledger._pool.submit(lambda: (stopped.set(), release.wait()))  # (released in the finally below)
    assert stopped.wait(BOUND)

    async def both() -> list[int]:
        return [await asyncio.wait_for(ledger.record(entry(n)), BOUND) for n in (1, 2)]

    try:
        assert asyncio.run(both()) == [2, 3]
    finally:
        release.set()
    ledger.close()
    assert verified(tmp_path / "ledger").ok


def test_a_record_the_lock_holds_back_waits_on_the_writer_thread_in_order(tmp_path: Path) -> None:
    """Another writer (another session's process) holds the lock: the record waits for it on the
    writer thread, not on the loop, and the records after it keep their order."""
    import fcntl

    directory = tmp_path / "ledger"
    ledger = FileLedger(directory)
    ledger.record_now(entry(0))
    other = os.open(directory / "ledger.jsonl", os.O_RDONLY)
    fcntl.flock(other, fcntl.LOCK_EX)

    async def three() -> list[int]:
        tasks = [asyncio.ensure_future(ledger.record(entry(n))) for n in (1, 2, 3)]
        await asyncio.sleep(0)
        assert not any(t.done() for t in tasks)  # held back, and the loop still runs
        fcntl.flock(other, fcntl.LOCK_UN)
        return list(await asyncio.wait_for(asyncio.gather(*tasks), BOUND))

    try:
        assert asyncio.run(three()) == [2, 3, 4]
    finally:
        os.close(other)
    ledger.close()
    assert [r["body"]["gate_id"] for r in records(directory)] == [f"gate-{n}" for n in range(4)]


#: in a process of its own (its imports are the subject): the session's ledger opened, nothing recorded,
#: then one record
KEYS_LOADED = """
import sys
from pathlib import Path
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.ports.protocols import LedgerEntry
SERIALIZATION = "cryptography.hazmat.primitives.serialization"
ledger = FileLedger(Path(sys.argv[1]))
print(SERIALIZATION in sys.modules)
ledger.record_now(LedgerEntry(type="decision", body={"gate_id": "g", "verdict": "allow"}))
ledger.close()
print(SERIALIZATION in sys.modules)
"""


def test_the_key_machinery_loads_at_the_first_record_not_at_the_start(tmp_path: Path) -> None:
    """Every session opens the ledger, most record nothing: importing it loaded cryptography's key
    serialization (with its RSA, DSA, EC and SSH modules, ~18 ms of CPU at each start of attach, demo,
    acp, board). Now the first record, which makes or reads the key, loads it (FAILS before: True at
    the start). The record is signed and verifies as before."""
    run = subprocess.run(
        [sys.executable, "-c", KEYS_LOADED, str(tmp_path / "ledger")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["False", "True"]
    assert (tmp_path / "ledger" / ledger_file.PRIVATE_KEY).exists()
    assert verified(tmp_path / "ledger").ok
