"""A process for ``test_ledger_killed.py``: appends decision records to the file ledger in DIR as
fast as it can (the real writer thread: append, fsync, checkpoint), writing each acknowledged
sequence number to ACKS once ``record`` returned. Its parent kills it with SIGKILL mid-stream.

    python -m tests.ledger.killed_writer DIR ACKS COUNT
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.ports.protocols import LedgerEntry


async def main(directory: Path, acks: Path, count: int) -> None:
    ledger = FileLedger(directory)
    with acks.open("a") as out:
        for n in range(count):
            body = {"gate_id": f"gate-{n}", "shown": "run_command: " + "x" * (n % 300), "verdict": "allow"}
            seq = await ledger.record(LedgerEntry(type="decision", body=body))
            out.write(f"{seq}\n")
            out.flush()
    ledger.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])))
