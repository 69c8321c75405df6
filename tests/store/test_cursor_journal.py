"""FileCursorStore's journal (the CursorJournal port): O(change) records, replay, compaction, crash edges."""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.store import FileCursorStore
from agy_harness.adapters.store import journal as J
from agy_harness.core import safejson
from agy_harness.ports.protocols import CursorJournal

CID = "2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e"


def state(text: str = "", *, status: str = "running", gates: dict[str, str] | None = None) -> dict[str, Any]:
    live = {
        "t/5": {
            "message_id": "t/5",
            "text": text,
            "text_index": len(text),
            "thinking": "",
            "thinking_index": 0,
        }
    }
    return {"live": live if text else {}, "gates": gates or {}, "status": status, "turn": "t/0",
            "input_tokens": 3, "output_tokens": 0, "cache_read_tokens": 0, "model": "M"}  # fmt: skip


def loaded_state(store: FileCursorStore, cascade_id: str = CID) -> tuple[list[str], dict[str, Any]]:
    fresh = FileCursorStore(store.directory)  # another process: nothing in memory
    cursor = fresh.load(cascade_id)
    assert cursor is not None
    s = dict(cursor.state)
    assert s.pop("committed") == cursor.committed
    fresh.close()
    return cursor.committed, s


def test_it_is_a_cursor_journal(tmp_path: Path) -> None:
    assert isinstance(FileCursorStore(tmp_path), CursorJournal)


def test_records_replay_to_the_last_state(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    assert store.record(CID, ["t/0"], state()) is True  # commits: a sync is due
    store.sync(CID)
    text = ""
    for piece in ["Hel", "lo, ", "wor", "ld"]:
        text += piece
        assert store.record(CID, [], state(text)) is False  # a delta only: written, no fsync needed
    store.record(CID, ["t/5"], state(status="idle"))  # the reply settled: live gone, committed
    store.sync(CID)
    committed, s = loaded_state(store)
    assert committed == ["t/0", "t/5"]
    assert s == state(status="idle")


def test_a_streamed_reply_costs_its_length_not_its_square(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    text = ""
    for i in range(400):
        text += f"chunk {i:04d} " * 25  # 275 bytes a delta, 110 KB in all
        store.record(CID, [], state(text))
    store.sync(CID)
    size = store.journal_path(CID, 0).stat().st_size
    assert size < 2 * len(text) + 400 * 200  # whole-state records would be ~22 MB
    assert loaded_state(store)[1] == state(text)


def test_without_a_sync_the_records_survive_a_process_crash(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    store.record(CID, ["a", "b"], state("partial"))  # written with write(2): the OS has it
    # the process dies here: no sync, no close
    assert loaded_state(store) == (["a", "b"], state("partial"))


def test_compaction_keeps_the_state_and_bounds_the_journal(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path, compact_min=4096)
    keys: list[str] = []
    for i in range(2000):
        keys.append(f"t/{i}")
        if store.record(CID, [f"t/{i}"], state(f"reply {i}")):
            store.sync(CID)
    store.sync(CID)
    assert store.compactions > 3
    files = sorted(p.name for p in tmp_path.iterdir())
    generation = store._open[CID].generation
    assert files == sorted([f"{CID}.json", f"{CID}.{generation}.journal"]) or files == [f"{CID}.json"]
    assert loaded_state(store) == (keys, state("reply 1999"))


def test_a_crash_between_the_new_snapshot_and_the_old_journal_replays_nothing_twice(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path, compact_min=1)
    store.record(CID, ["a"], state("x"))
    store.sync(CID)  # compacts: snapshot generation 1, journal 0 deleted
    assert store._open[CID].generation == 1
    # a stale journal of generation 0, as if the crash came before its unlink
    store.journal_path(CID, 0).write_bytes(J.encode({"c": ["zombie"], "s": {"status": "failed"}}))
    assert loaded_state(store) == (["a"], state("x"))


def test_a_torn_last_line_is_dropped_and_cut(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    store.record(CID, ["a"], state("one"))
    store.sync(CID)
    path = store.journal_path(CID, 0)
    good = path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(b'{"c":["b"],"s":{"sta')  # the crash came mid-write
    assert loaded_state(store) == (["a"], state("one"))
    assert path.stat().st_size == good
    again = FileCursorStore(tmp_path)  # appends after the cut stay readable
    again.record(CID, ["b"], state("two"))
    assert loaded_state(again) == (["a", "b"], state("two"))


def test_an_unreadable_record_stops_the_replay_with_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileCursorStore(tmp_path)
    store.record(CID, ["a"], state("one"))
    path = store.journal_path(CID, 0)
    with open(path, "ab") as fh:
        fh.write(b"{not json}\n" + J.encode({"c": ["b"]}))
    with caplog.at_level(logging.ERROR):
        assert loaded_state(store) == (["a"], state("one"))
    assert any("unreadable record" in r.getMessage() for r in caplog.records)


def test_save_then_record_then_save(tmp_path: Path) -> None:
    from agy_harness.ports.protocols import Cursor

    store = FileCursorStore(tmp_path)
    full = {**state("hi"), "committed": ["a"]}
    store.save(Cursor(cascade_id=CID, committed=["a"], state=full))
    store.record(CID, ["b"], state("hi there"))
    store.sync(CID)
    assert loaded_state(store) == (["a", "b"], state("hi there"))
    store.save(Cursor(cascade_id=CID, committed=["c"], state={**state(), "committed": ["c"]}))
    assert sorted(os.listdir(tmp_path)) == [f"{CID}.json"]  # the journal went with the new snapshot
    assert loaded_state(store) == (["c"], state())


def test_random_changes_round_trip(tmp_path: Path) -> None:
    rng = random.Random(7)
    store = FileCursorStore(tmp_path, compact_min=2048)
    committed: list[str] = []
    text, s = "", state()
    for i in range(300):
        roll = rng.random()
        added: list[str] = []
        if roll < 0.5:
            text += rng.choice(["a", "bc", "☃", "\ud800", "\n"])  # a lone surrogate too
        elif roll < 0.6:
            text = text[: rng.randrange(len(text) + 1)] + "rewritten"  # a rewrite, not an append
        elif roll < 0.8:
            added = [f"k/{i}"]
            committed.append(f"k/{i}")
            text = ""
        s = state(text, status=rng.choice(["running", "idle"]), gates={"g": str(i)} if roll > 0.9 else {})
        if store.record(CID, added, s):
            store.sync(CID)
    assert loaded_state(store) == (committed, s)


def test_the_direct_line_is_the_record_the_encoder_writes() -> None:
    """``journal.line`` writes the common record (keys and fields, no reply streaming) straight from
    the values: it must be byte for byte ``encode(diff(...))``, for any value a field may hold, and
    replay to the new state."""
    rng = random.Random(11)
    values: list[Any] = ["", "plain", "é☃", "\ud800 lone", 'q"\\\n\t\x00', 0, 7, -3, 10**30, None, True, False,
                         1.5, float("nan"), {"g/1": "gate-1"}, {}, ["x", 1], {"deep": [[[{"a": None}]]]}]  # fmt: skip
    fields = ["status", "turn", "input_tokens", "model", "gates", "trajectory_id"]
    old: dict[str, Any] = {"live": {}}
    committed: dict[str, None] = {}
    replayed: dict[str, Any] = {}
    for i in range(2000):
        new = dict(old)
        for name in rng.sample(fields, rng.randrange(len(fields) + 1)):
            new[name] = rng.choice(values)
        added = [rng.choice([f"k/{i}", f"k/é{i}", f'k/"{i}', f"k/\udc80{i}"])] if rng.random() < 0.6 else []
        if rng.random() < 0.05:  # a reply streaming: the general way
            new["live"] = {"t/1": {"message_id": "t/1", "text": "x" * i, "text_index": i}}
        rec = J.diff(old, new, added)
        line, durable = J.line(old, new, added)
        assert line == (J.encode(rec) if rec else b"")
        assert durable == J.is_durable_change(rec)
        if line:
            J.apply(committed, replayed, safejson.loads(line))
        old = new
    nan_free = {k: v for k, v in old.items() if v == v}  # NaN != NaN; the rest must match
    assert {k: v for k, v in replayed.items() if k in nan_free} == nan_free


def test_a_key_that_is_not_a_str_takes_the_general_way() -> None:
    line, durable = J.line({"live": {}}, {"live": {}, "status": "idle"}, [7])  # type: ignore[list-item]
    assert (line, durable) == (b'{"c":[7],"s":{"status":"idle"}}\n', True)


def test_a_short_write_is_finished_before_record_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write(2) may take part of a line (a signal, a nearly full disk): the rest follows at once, so
    the journal never holds half a record that a later one runs into."""
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))  # 7 bytes a call
    store = FileCursorStore(tmp_path)
    store.record(CID, ["a"], state("one"))
    store.record(CID, ["b"], state(status="idle"))
    monkeypatch.undo()
    assert loaded_state(store) == (["a", "b"], state(status="idle"))
