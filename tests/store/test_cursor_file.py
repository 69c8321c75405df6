"""FileCursorStore and MemoryCursorStore against the CursorStore port."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import pytest

from agy_harness.adapters.store import FileCursorStore, MemoryCursorStore, cursor_file_name
from agy_harness.ports.protocols import Cursor, CursorStore


def cursor(cascade_id: str = "2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e", n: int = 3) -> Cursor:
    return Cursor(
        cascade_id=cascade_id,
        committed=[f"traj/{i}" for i in range(n)] + ["traj/u:exec-1"],
        state={
            "input_tokens": 17161,
            "model": "MODEL_PLACEHOLDER_M20",
            "live": {"traj/9": {"text": "héllo ☃"}},
        },
    )


@pytest.mark.parametrize("factory", [FileCursorStore, lambda d: MemoryCursorStore()])
def test_round_trip_and_missing(tmp_path: Path, factory: object) -> None:
    store = factory(tmp_path / "cursors")  # type: ignore[operator]
    assert isinstance(store, CursorStore)
    assert store.load("nope") is None
    c = cursor()
    store.save(c)
    loaded = store.load(c.cascade_id)
    assert loaded == c and loaded is not c
    c2 = cursor(n=5)
    store.save(c2)
    assert store.load(c.cascade_id) == c2
    other = cursor("other", n=1)
    store.save(other)
    assert store.load("other") == other
    assert store.load(c.cascade_id) == c2


def test_memory_store_keeps_copies() -> None:
    store = MemoryCursorStore()
    c = cursor()
    store.save(c)
    c.committed.append("mutated")
    loaded = store.load(c.cascade_id)
    assert loaded is not None and "mutated" not in loaded.committed
    loaded.committed.append("again")
    assert "again" not in (store.load(c.cascade_id) or cursor()).committed


def test_atomic_write_leaves_no_temp_files_and_intact_content(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    for n in range(20):
        store.save(cursor(n=n))
    c = cursor(n=20)
    store.save(c)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{c.cascade_id}.json"]
    assert Cursor.model_validate_json((tmp_path / f"{c.cascade_id}.json").read_bytes()) == c


def test_a_failed_write_keeps_the_old_cursor_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileCursorStore(tmp_path)
    old = cursor(n=1)
    store.save(old)

    def boom(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        store.save(cursor(n=9))
    monkeypatch.undo()
    assert store.load(old.cascade_id) == old
    assert [p.name for p in tmp_path.iterdir()] == [f"{old.cascade_id}.json"]


@pytest.mark.parametrize(
    "content", [b"", b"{not json", b'{"committed": []}', b"[1, 2]", b'{"cascade_id": 5}', b"\xff\xfe"]
)
def test_a_corrupt_file_is_logged_set_aside_and_reads_as_none(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileCursorStore(tmp_path)
    path = store.path_for("c1")
    path.write_bytes(content)
    with caplog.at_level(logging.ERROR, logger="agy_harness.adapters.store.cursor_file"):
        assert store.load("c1") is None
    assert len(caplog.records) == 1 and "corrupt" in caplog.records[0].getMessage()
    assert not path.exists()
    assert path.with_name(path.name + ".corrupt").read_bytes() == content
    store.save(cursor("c1"))  # and the store carries on
    assert store.load("c1") == cursor("c1")


def test_a_cursor_of_another_cascade_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FileCursorStore(tmp_path)
    store.path_for("c1").write_text(cursor("c2").model_dump_json())
    with caplog.at_level(logging.ERROR):
        assert store.load("c1") is None
    assert caplog.records


@pytest.mark.parametrize(
    "cascade_id", ["../escape", "a/b", "..", ".", "", ".hidden", "x" * 300, "id with spaces"]
)
def test_cascade_ids_are_sanitized_into_the_directory(tmp_path: Path, cascade_id: str) -> None:
    store = FileCursorStore(tmp_path / "d")
    c = cursor(cascade_id)
    store.save(c)
    (written,) = (tmp_path / "d").iterdir()
    assert written.parent == tmp_path / "d"
    assert not written.name.startswith(".")
    assert len(written.name) < 200
    assert store.load(cascade_id) == c


def test_sanitized_names_do_not_collide() -> None:
    names = {cursor_file_name(x) for x in ["a/b", "a_b", "a?b", "a b"]}
    assert len(names) == 4
    assert (
        cursor_file_name("2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e")
        == "2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e.json"
    )


def test_concurrent_saves_never_tear_the_file(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for n in range(15):
                store.save(cursor(n=k * 100 + n))
                assert store.load(cursor().cascade_id) is not None
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(list(tmp_path.iterdir())) == 1
