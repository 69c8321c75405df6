"""A background ledger write the loop cancels before it ran (the session stopped after the drain) is
said in the log, not left as Python's "coroutine was never awaited" (seen once at the end of the
omnigent flood test); one that ran is written."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.store.ledger_file import LEDGER, FileLedger
from agy_harness.adapters.store.ledger_read import read_file
from agy_harness.composition.service.decisions import DecisionRecorder
from agy_harness.ports.protocols import LedgerEntry


async def _no_steps(_: object) -> list[Any]:
    return []


def _written(directory: Path) -> list[Any]:
    """The bodies of the delivery records in the ledger's file."""
    lines = read_file(directory, LEDGER).decode().splitlines()
    return [r["body"] for r in map(json.loads, lines) if r.get("type") == "delivery"]


async def test_a_write_cancelled_before_it_ran_is_logged_not_left_unawaited(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    ledger = FileLedger(tmp_path)  # the real ledger on disk
    recorder = DecisionRecorder(ledger, _no_steps)
    recorder._later(LedgerEntry(type="delivery", body={"n": 1}))
    await recorder.drain()
    assert _written(tmp_path) == [{"n": 1}]  # one that runs is written

    recorder._later(LedgerEntry(type="delivery", body={"n": 2}))
    (task,) = recorder._tasks
    task.cancel()  # before it ever ran, as the loop's shutdown does
    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await asyncio.gather(task, return_exceptions=True)
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)], [str(w.message) for w in caught]
    assert "a record was not written: the session stopped first" in caplog.text
    assert not recorder._tasks and _written(tmp_path) == [{"n": 1}]
    ledger.close()
