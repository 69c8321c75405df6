"""TranscriptTailSource as a StepSource, in watchfiles mode and in polling mode."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from agy_harness.adapters.transcript import TranscriptTailSource
from agy_harness.ports.protocols import StepSource

from .helpers import Collector, append, indices, line_bytes

CASCADE = "cascade-1"


def make_source(root: Path, mode: str) -> TranscriptTailSource:
    if mode == "watch":
        # A poll interval far beyond the test's bound: only watchfiles can wake the tail in time.
        return TranscriptTailSource(root, poll_interval=30.0, use_watchfiles=True)
    return TranscriptTailSource(root, poll_interval=0.02, use_watchfiles=False)


MODES = pytest.mark.parametrize("mode", ["watch", "poll"])


def test_it_is_a_step_source(tmp_path: Path) -> None:
    source = TranscriptTailSource(tmp_path)
    assert isinstance(source, StepSource)
    assert (source.name, source.live) == ("transcript", False)


@MODES
async def test_follows_appends(tmp_path: Path, mode: str) -> None:
    source = make_source(tmp_path, mode)
    path = source.path_for(CASCADE)
    append(path, line_bytes(0) + line_bytes(1))
    async with Collector(source, CASCADE) as c:
        await c.until(lambda: len(c.steps) == 2)
        assert c.batches[0].snapshot and c.batches[0].source == "transcript"
        assert c.batches[0].cascade_id == CASCADE
        append(path, line_bytes(4))
        await c.until(lambda: len(c.steps) == 3)
        append(path, line_bytes(2) + line_bytes(3))
        await c.until(lambda: len(c.steps) == 5)
        assert indices(c.steps) == [0, 1, 4, 2, 3]
        assert not any(b.snapshot for b in c.batches[1:])
        assert c.steps[2]["metadata"]["sourceTrajectoryStepInfo"]["cascadeId"] == CASCADE
    if mode == "watch":
        assert source.watch_wakeups >= 1


@MODES
async def test_file_created_after_the_source_starts(tmp_path: Path, mode: str) -> None:
    source = make_source(tmp_path, mode)
    path = source.path_for(CASCADE)
    async with Collector(source, CASCADE) as c:
        await asyncio.sleep(0.1)
        assert c.batches == []
        (tmp_path / "brain").mkdir()
        await asyncio.sleep(0.05)
        append(path, line_bytes(0))
        await c.until(lambda: len(c.steps) == 1)
        assert c.batches[0].snapshot
        append(path, line_bytes(1))
        await c.until(lambda: len(c.steps) == 2)


@MODES
async def test_partial_lines_and_a_split_utf8_character(tmp_path: Path, mode: str) -> None:
    source = make_source(tmp_path, mode)
    path = source.path_for(CASCADE)
    append(path, b"")
    data = line_bytes(1, "naïve ☃")
    cut = data.index("☃".encode()) + 2
    async with Collector(source, CASCADE) as c:
        await c.until(lambda: len(c.batches) == 1)
        append(path, data[:cut])
        await asyncio.sleep(0.1)
        assert c.steps == []
        append(path, data[cut:] + line_bytes(2)[:5])
        await c.until(lambda: len(c.steps) == 1)
        assert c.steps[0]["plannerResponse"]["response"] == "naïve ☃"
        append(path, line_bytes(2)[5:])
        await c.until(lambda: len(c.steps) == 2)
        assert indices(c.steps) == [1, 2]


@MODES
async def test_truncation_and_rotation(tmp_path: Path, mode: str) -> None:
    source = make_source(tmp_path, mode)
    path = source.path_for(CASCADE)
    append(path, line_bytes(0) + line_bytes(1))
    async with Collector(source, CASCADE) as c:
        await c.until(lambda: len(c.steps) == 2)
        with open(path, "wb") as fh:  # truncate and start over
            fh.write(line_bytes(5))
        await c.until(lambda: len(c.steps) == 3)
        assert c.batches[-1].snapshot and indices(c.batches[-1].steps) == [5]
        rotated = path.with_suffix(".1")
        os.rename(path, rotated)  # rotation: a new file at the path
        append(path, line_bytes(8))
        await c.until(lambda: len(c.steps) == 4)
        assert c.batches[-1].snapshot and indices(c.batches[-1].steps) == [8]
        append(path, line_bytes(9))
        await c.until(lambda: len(c.steps) == 5)
        assert indices(c.steps) == [0, 1, 5, 8, 9]


@MODES
async def test_a_malformed_line_is_skipped_and_logged(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    source = make_source(tmp_path, mode)
    path = source.path_for(CASCADE)
    append(path, line_bytes(0))
    with caplog.at_level(logging.WARNING, logger="agy_harness.adapters.transcript.tail"):
        async with Collector(source, CASCADE) as c:
            await c.until(lambda: len(c.steps) == 1)
            append(path, b"garbage}\n" + line_bytes(1))
            await c.until(lambda: len(c.steps) == 2)
    assert indices(c.steps) == [0, 1]
    assert [r.getMessage().split(": ")[0] for r in caplog.records] == [f"{path}:2"]


async def test_closing_the_iterator_stops_the_watcher(tmp_path: Path) -> None:
    source = TranscriptTailSource(tmp_path, poll_interval=0.05)
    path = source.path_for(CASCADE)
    append(path, line_bytes(0))
    before = {t for t in asyncio.all_tasks() if t.get_name().startswith("transcript-watch")}
    iterator = source.batches(CASCADE)
    batch = await anext(iterator)
    assert indices(batch.steps) == [0]
    append(path, line_bytes(1))
    batch = await asyncio.wait_for(anext(iterator), 30)
    assert indices(batch.steps) == [1]
    await iterator.aclose()  # type: ignore[attr-defined]
    after = {t for t in asyncio.all_tasks() if t.get_name().startswith("transcript-watch")}
    assert after == before
