"""The CursorStore contract, held by the file store and the memory one (the tests' stand-in too):
missing, round trip, overwrite, one cursor per cascade, and what a caller gets back is its own copy.
The file store's journal (CursorJournal) and quarantine (CursorQuarantine) have their own suites in
tests/store/."""

from __future__ import annotations

from pathlib import Path

import pytest

from agy_harness.adapters.store.cursor_file import FileCursorStore, MemoryCursorStore
from agy_harness.ports.protocols import Cursor, CursorJournal, CursorQuarantine, CursorStore
from tests.fakes import ObservedCursorStore

STORES = ["file", "memory", "observed"]


def store_of(kind: str, tmp_path: Path) -> CursorStore:
    return {
        "file": lambda: FileCursorStore(tmp_path),
        "memory": MemoryCursorStore,
        "observed": ObservedCursorStore,
    }[kind]()


@pytest.mark.parametrize("kind", STORES)
def test_a_cursor_store_round_trips_and_overwrites(kind: str, tmp_path: Path) -> None:
    store = store_of(kind, tmp_path)
    assert isinstance(store, CursorStore)
    assert store.load("c/1") is None
    store.save(Cursor(cascade_id="c/1", committed=["a"], state={"status": "idle", "input_tokens": 5}))
    store.save(Cursor(cascade_id="other", committed=["x"]))
    store.save(Cursor(cascade_id="c/1", committed=["a", "b"], state={"status": "running"}))
    loaded = store.load("c/1")
    assert loaded is not None and loaded.committed == ["a", "b"] and loaded.state == {"status": "running"}
    assert store.load("other").committed == ["x"]  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", STORES)
def test_what_a_caller_gets_back_is_its_own(kind: str, tmp_path: Path) -> None:
    store = store_of(kind, tmp_path)
    cursor = Cursor(cascade_id="c", committed=["a"], state={"status": "idle"})
    store.save(cursor)
    cursor.committed.append("changed after the save")
    loaded = store.load("c")
    assert loaded is not None and loaded.committed == ["a"]
    loaded.state["status"] = "changed after the load"
    assert store.load("c").state == {"status": "idle"}  # type: ignore[union-attr]


# -- CursorJournal and CursorQuarantine: the file store is their one adapter ------------------------


def test_a_journal_records_changes_and_a_restart_reads_them_back(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    assert isinstance(store, CursorJournal)
    store.save(Cursor(cascade_id="c", committed=["a"], state={"status": "idle"}))
    due = store.record("c", ["b"], {"status": "running"})
    assert isinstance(due, bool)
    store.sync("c")
    store.close()
    again = FileCursorStore(tmp_path).load("c")  # a restart
    assert again is not None and again.committed == ["a", "b"] and again.state["status"] == "running"


def test_a_damaged_cursor_is_set_aside_said_once_and_never_deleted(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    assert isinstance(store, CursorQuarantine)
    store.save(Cursor(cascade_id="c", committed=["a"]))
    store.close()
    store.path_for("c").write_text("{not a cursor", encoding="utf-8")
    fresh = FileCursorStore(tmp_path)
    assert fresh.load("c") is None
    said = fresh.damaged("c")
    assert said and fresh.damaged("c") is None  # said once
    assert any(p.name.endswith(".corrupt") or ".corrupt" in p.name for p in tmp_path.iterdir())
    fresh.save(Cursor(cascade_id="c", committed=["x"]))
    aside = fresh.quarantine("c", "its state does not fit the mapper")
    assert Path(aside).exists() and fresh.load("c") is None
