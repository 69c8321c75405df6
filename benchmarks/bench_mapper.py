"""Mapper throughput on the recorded fixtures, and the prefix-diff cost of a streamed reply.

    python benchmarks/bench_mapper.py

Prints steps/s for the whole mapper (parse + map + dedup) on the 18 recorded agy steps (renumbered
so none dedups), and the cost of mapping a 10 KB vs a 1 MB reply streamed as 200 cumulative frames,
with their ratio (linear growth in size would be 100x).
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

from common import write_summary

from agy_harness.core.reconciler import Reconciler

#: the recorded agy steps shipped in the repository (byte-identical copies: tests/simulator/test_shapes.py)
FIXTURES = Path(__file__).resolve().parents[1] / "adapters" / "simulator" / "shapes"


def renumbered(steps: list[dict], copies: int) -> list[dict]:
    out = []
    for n in range(copies):
        for i, step in enumerate(steps):
            s = copy.deepcopy(step)
            meta = s["metadata"]
            meta["sourceTrajectoryStepInfo"]["stepIndex"] = n * 100 + i
            meta["executionId"] = f"{meta.get('executionId', 'x')}-{n}-{i}"
            out.append(s)
    return out


def cascade_of(steps: list[dict]) -> str:
    """The cascade the recorded steps belong to (one conversation): a reconciler is made for its own
    cascade, and learns the cascade's trajectory from the first step it is fed."""
    return str(steps[0]["metadata"]["sourceTrajectoryStepInfo"]["cascadeId"])


def one_pass(steps: list[dict], cascade: str) -> float:
    """Seconds for a fresh reconciler of ``cascade`` to take every step."""
    r = Reconciler(cascade)
    t = time.perf_counter()
    for s in steps:
        r.feed(s)
    return time.perf_counter() - t


def throughput(steps: list[dict]) -> float:
    cascade = cascade_of(steps)
    return len(steps) / min(one_pass(steps, cascade) for _ in range(5))


def streamed(size: int, frames: int = 200) -> float:
    done = json.loads((FIXTURES / "stream_planner_text_done.json").read_text())
    text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    snapshots = []
    for k in range(1, frames + 1):
        s = copy.deepcopy(done) if k == frames else json.loads(json.dumps(done))
        s["plannerResponse"]["modifiedResponse"] = text[: size * k // frames]
        if k < frames:
            s["status"] = "CORTEX_STEP_STATUS_GENERATING"
        snapshots.append(s)
    best = float("inf")
    for _ in range(3):
        r = Reconciler(cascade_of(snapshots))
        t = time.perf_counter()
        for s in snapshots:
            r.feed(s)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    steps = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))]
    all_steps = renumbered(steps, 200)
    rate = throughput(all_steps)
    print(f"mapper throughput: {rate:,.0f} steps/s over {len(all_steps)} recorded-shape steps")
    small, large = streamed(10_000), streamed(1_000_000)
    print(f"streamed reply, 200 frames: 10 KB {small * 1e3:.2f} ms, 1 MB {large * 1e3:.2f} ms")
    print(f"ratio 1 MB / 10 KB: {large / small:.1f}x (size ratio 100x)")
    print(f"per frame at 1 MB: {large / 200 * 1e6:.0f} us")
    write_summary(
        "mapper",
        {
            "steps_per_s": rate,
            "stream_10k_ms": small * 1e3,
            "stream_1m_ms": large * 1e3,
            "ratio": large / small,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
