"""Frame → event latency on the simulator: from the moment agy's step grows to the moment the harness
hands the matching text delta to its sink, for the stream and for the poll (250 ms).

    python benchmarks/bench_latency.py
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from common import TimedSink, machine, percentile

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.harness import Harness, HarnessOptions
from agy_harness.core.steps import parse_step, planner_text
from agy_harness.ports.events import TextDelta

STORY = "Write a long story about a lighthouse keeper."
TURNS = 6


async def measure(mode: str) -> list[float]:
    produced: dict[tuple[str, int], float] = {}

    def on_step(cascade_id: str, raw: dict[str, Any]) -> None:
        step = parse_step(raw)
        if step is not None and step.type == "PLANNER_RESPONSE":
            produced.setdefault((str(step.key), len(planner_text(step))), time.perf_counter())

    async with Simulator(pace=0.3) as sim:
        sim.subscribe(on_step)
        sink = TimedSink()
        async with RpcClient(sim.base_url) as client:
            poll = RpcPollSource(client, interval=0.25)
            source = RpcStreamSource(client) if mode == "stream" else poll
            harness = Harness(
                cascade_id=sim.cascade_id,
                sources=[source],
                snapshot=poll,
                sink=sink,
                options=HarnessOptions(directory_interval=0),
            )
            async with harness:
                for _ in range(TURNS):
                    await sim.submit_user_turn(STORY)
                    await sim.wait_idle(timeout=60)
                await asyncio.sleep(0.5)
    latencies = []
    sent: dict[str, int] = {}
    for at, event in sink.events:
        if isinstance(event, TextDelta):
            sent[event.step_key] = sent.get(event.step_key, 0) + len(event.delta)
            origin = produced.get((event.step_key, sent[event.step_key]))
            if origin is not None:
                latencies.append((at - origin) * 1e3)
    return latencies


def main() -> int:
    print(f"frame → event latency ({machine()})")
    results = {}
    for mode in ("stream", "poll"):
        lat = asyncio.run(measure(mode))
        results[mode] = lat
        print(
            f"  {mode:6} n={len(lat):4}  p50 {percentile(lat, 50):7.2f} ms  p99 {percentile(lat, 99):7.2f} ms"
            f"  max {max(lat):7.2f} ms"
        )
    ratio = percentile(results["poll"], 50) / percentile(results["stream"], 50)
    print(f"  poll / stream p50: {ratio:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
