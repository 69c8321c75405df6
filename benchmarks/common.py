"""Shared bits of the benchmarks (not a benchmark itself): percentiles, the machine line, a
recording sink, the simulator in a subprocess, and the summary file run_all.py reads."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer

SUMMARY_ENV = "AGY_BENCH_SUMMARY"  # run_all.py sets it: each script adds its figures there as JSON


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (``p`` in 0..100); NaN when ``values`` is empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def ratio(a: float, b: float) -> float:
    return a / b if b else math.inf


def machine() -> str:
    return (
        f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
        f"{date.today().isoformat()}"
    )


def quiet_logs() -> None:
    """The harness logs every fallback it recovers from, on purpose; keep the figures readable."""
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)


def write_summary(name: str, figures: dict[str, Any]) -> None:
    """Record ``figures`` for run_all.py (a no-op when the script runs on its own)."""
    path = os.environ.get(SUMMARY_ENV)
    if not path:
        return
    target = Path(path)
    data = json.loads(target.read_text()) if target.exists() and target.stat().st_size else {}
    data[name] = figures
    target.write_text(json.dumps(data, indent=2))


class TimedSink:
    """An EventSink that records each event with the moment the harness handed it over."""

    delivers_at_once = True  # deliver never waits (a list append): the harness needs no task per batch

    def __init__(self) -> None:
        self.events: list[tuple[float, Event]] = []

    async def deliver(self, events: Sequence[Event]) -> int:
        now = time.perf_counter()
        self.events.extend((now, e) for e in events)
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return GateAnswer(allow=True)

    async def withdraw(self, gate_id: str) -> None:
        return None


class CountingSink:
    """An EventSink that counts what it is handed, by event type, and keeps nothing else: as a sink
    that forwards events (omnigent's posts each and forgets it) leaves the harness's process. A sink
    that kept every event would grow the heap by some 100,000 objects over a 300-session run, and
    each full garbage collection of the harness's loop would walk them all: that cost is the sink's
    own, not the harness's."""

    delivers_at_once = True  # deliver never waits: the harness needs no task per batch

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    async def deliver(self, events: Sequence[Event]) -> int:
        counts = self.counts
        for e in events:
            counts[e.type] = counts.get(e.type, 0) + 1
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return GateAnswer(allow=True)

    async def withdraw(self, gate_id: str) -> None:
        return None


@contextlib.contextmanager
def simulator_process(*args: str) -> Iterator[dict[str, Any]]:
    """``python -m agy_harness.adapters.simulator`` in its own process: {"port", "cascade", "pid"}."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agy_harness.adapters.simulator", *args], stdout=subprocess.PIPE, text=True
    )
    try:
        info: dict[str, Any] = {"pid": proc.pid}
        assert proc.stdout is not None
        while "cascade" not in info:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the simulator exited before printing its port")
            key, _, value = line.strip().partition(" ")
            info[key] = int(value) if key.endswith("port") else value
        yield info
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
