"""TranscriptFollower: the synchronous reader behind the tail, driven write by write."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from agy_harness.adapters.transcript.format import encode_line, is_completed, step_to_line
from agy_harness.adapters.transcript.tail import TranscriptFollower
from agy_harness.core.reconciler import Reconciler
from tests.core.fixtures import CASCADE, fixture, names

from .helpers import append, indices, line_bytes


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "transcript_full.jsonl"


def read(f: TranscriptFollower) -> tuple[list[int], list[bool]]:
    results = f.poll()
    return [i for r in results for i in indices(r.steps)], [r.snapshot for r in results]


def test_missing_file_yields_nothing_until_it_appears(path: Path) -> None:
    f = TranscriptFollower(path)
    assert f.poll() == []
    append(path, line_bytes(0) + line_bytes(1))
    assert read(f) == ([0, 1], [True])
    assert f.poll() == []


def test_an_empty_file_is_an_empty_snapshot(path: Path) -> None:
    append(path, b"")
    f = TranscriptFollower(path)
    results = f.poll()
    assert len(results) == 1 and results[0].snapshot and results[0].steps == ()


def test_appends_are_followed_and_out_of_order_indices_kept_in_file_order(path: Path) -> None:
    append(path, line_bytes(3))
    f = TranscriptFollower(path, cascade_id="c1")
    assert read(f) == ([3], [True])
    append(path, line_bytes(1) + line_bytes(9))
    append(path, line_bytes(2))
    results = f.poll()
    assert [indices(r.steps) for r in results] == [[1, 9, 2]]
    assert not results[0].snapshot
    assert results[0].steps[0]["metadata"]["sourceTrajectoryStepInfo"]["cascadeId"] == "c1"


def test_a_partial_line_waits_for_its_newline(path: Path) -> None:
    f = TranscriptFollower(path)
    data = line_bytes(5)
    append(path, data[:10])
    assert read(f) == ([], [True])
    append(path, data[10:-1])
    assert f.poll() == []
    append(path, b"\n" + line_bytes(6)[:7])
    assert read(f) == ([5], [False])
    append(path, line_bytes(6)[7:])
    assert read(f) == ([6], [False])


def test_a_utf8_character_split_across_writes(path: Path) -> None:
    f = TranscriptFollower(path)
    data = line_bytes(1, "snow ☃ and é")
    cut = data.index("☃".encode()) + 1  # inside the 3-byte snowman
    append(path, data[:cut])
    assert read(f) == ([], [True])
    append(path, data[cut:])
    (result,) = f.poll()
    assert result.steps[0]["plannerResponse"]["response"] == "snow ☃ and é"
    assert f.malformed == 0


def test_split_across_tiny_reads(path: Path) -> None:
    data = line_bytes(1, "ünï ☃") + line_bytes(2, "二")
    append(path, data)
    f = TranscriptFollower(path, read_size=3)
    (result,) = f.poll()
    assert [s["plannerResponse"]["response"] for s in result.steps] == ["ünï ☃", "二"]


def test_truncation_rereads_from_the_start(path: Path) -> None:
    append(path, line_bytes(0) + line_bytes(1) + line_bytes(2))
    f = TranscriptFollower(path)
    assert read(f) == ([0, 1, 2], [True])
    with open(path, "wb") as fh:
        fh.write(line_bytes(7))
    assert read(f) == ([7], [True])
    append(path, line_bytes(8))
    assert read(f) == ([8], [False])
    assert f.generations == 2


def test_a_rewrite_to_the_same_length_is_noticed_by_its_first_bytes(path: Path) -> None:
    append(path, line_bytes(1) + line_bytes(2))
    f = TranscriptFollower(path)
    assert read(f) == ([1, 2], [True])
    with open(path, "r+b") as fh:  # same size, different content, same inode
        fh.write(line_bytes(3) + line_bytes(4))
    assert read(f) == ([3, 4], [True])


def test_replacement_drains_the_old_file_then_reads_the_new_one(path: Path) -> None:
    append(path, line_bytes(0))
    f = TranscriptFollower(path)
    assert read(f) == ([0], [True])
    append(path, line_bytes(1))  # written to the old file just before rotation
    os.rename(path, path.with_suffix(".old"))
    append(path, line_bytes(10) + line_bytes(11))
    assert read(f) == ([1, 10, 11], [False, True])
    append(path, line_bytes(12))
    assert read(f) == ([12], [False])


def test_a_deleted_file_keeps_its_lines_then_the_recreated_one_is_read(path: Path) -> None:
    append(path, line_bytes(0))
    f = TranscriptFollower(path)
    assert read(f) == ([0], [True])
    path.unlink()
    assert f.poll() == []
    append(path, line_bytes(0) + line_bytes(1))
    assert read(f) == ([0, 1], [True])


def test_no_line_twice_within_a_generation(path: Path) -> None:
    append(path, line_bytes(0) + line_bytes(0) + line_bytes(1))
    f = TranscriptFollower(path)
    assert read(f) == ([0, 1], [True])
    append(path, line_bytes(1))
    assert f.poll() == []


def test_malformed_lines_are_logged_with_file_and_line_and_skipped(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    append(
        path,
        line_bytes(0)
        + b"{not json\n"
        + b"\n"
        + b'["a list"]\n'
        + b'{"type": "RUN_COMMAND"}\n'
        + b"\xff\xfe bad utf-8\n"
        + line_bytes(1),
    )
    f = TranscriptFollower(path)
    with caplog.at_level(logging.WARNING, logger="agy_harness.adapters.transcript.tail"):
        assert read(f) == ([0, 1], [True])
    assert f.malformed == 4
    where = [r.getMessage().split(": ")[0] for r in caplog.records]
    assert where == [f"{path}:2", f"{path}:4", f"{path}:5", f"{path}:6"]
    assert "not UTF-8" in caplog.records[-1].getMessage()


def test_crlf_line_endings(path: Path) -> None:
    append(path, line_bytes(0)[:-1] + b"\r\n")
    f = TranscriptFollower(path)
    assert read(f) == ([0], [True])


def test_the_core_commits_the_same_events_from_the_file_as_from_the_steps(path: Path) -> None:
    steps = [fixture(n) for n in reversed(names()) if is_completed(fixture(n))]  # out of step order
    for s in steps:
        line = step_to_line(s)
        assert line is not None
        data = encode_line(line)
        append(path, data[:3])
        append(path, data[3:])
    f = TranscriptFollower(path, cascade_id=CASCADE)
    (result,) = f.poll()
    assert len(result.steps) == len(steps)
    direct = [e.model_dump() for e in Reconciler(CASCADE).feed_all(steps)]
    tailed = [e.model_dump() for e in Reconciler(CASCADE).feed_all(result.steps)]
    assert tailed == direct
    assert len(direct) >= 5


def test_a_line_over_the_limit_is_skipped_with_bounded_memory(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #20: every body read from agy is bounded; a transcript line used to be buffered whole."""
    f = TranscriptFollower(path, read_size=1000, max_line=4000)
    append(path, line_bytes(0) + line_bytes(1, "x" * 20_000) + line_bytes(2))
    with caplog.at_level(logging.ERROR):
        assert read(f) == ([0, 2], [True])
    assert f.malformed == 1 and "over 4000 bytes" in caplog.text
