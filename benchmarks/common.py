"""Shared bits of the benchmarks: percentiles, a recording sink, the simulator in a subprocess."""

from __future__ import annotations

import contextlib
import platform
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def machine() -> str:
    import os

    return f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"


class TimedSink:
    """Records each event with the moment the harness handed it over."""

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
        proc.wait(10)
