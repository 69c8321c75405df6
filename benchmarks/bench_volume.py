"""100 MB through one session: the longest gap between frames, after a leaked probe stream.

    python benchmarks/bench_volume.py [--mb 100]

One RpcClient on the simulator (this process, TLS). First the version gate's probe
(``stream_exists``), then a reply grown frame by frame (cumulative snapshots, as agy sends them)
until ``--mb`` MB have crossed the wire; the producer waits for each frame to be read before the
next change, so every frame is one round. Reported: MB, frames, MB/s, the longest gap between two
frames reaching the reader, and whether every stream but the main one is closed at the simulator
(an abandoned stream holds nothing). Targets: no gap > 100 ms; no abandoned stream left open.
Before the transport change the probe's stream kept its HTTP/2 credit and the reader stopped at
~16 MB until the 20 s watchdog.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from common import machine, quiet_logs, write_summary

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.version_gate import stream_exists


async def amain(mb: int) -> int:
    size = 100 * 1024  # the reply's final length; frames carry it cumulatively
    target = mb * 1024 * 1024
    async with Simulator(pace=0) as sim, RpcClient(sim.base_url) as client:
        cid = sim.cascade_id
        await stream_exists(client, cid)
        cascade = sim._cascades[cid]
        await asyncio.sleep(0.2)
        leaked_open = len(cascade.watchers)
        step: dict[str, Any] = {
            "type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
            "status": "CORTEX_STEP_STATUS_GENERATING",
            "plannerResponse": {"modifiedResponse": ""},
        }
        index = sim._append(cascade, step)
        got = 0
        frames = 0
        longest = 0
        gaps: list[float] = []
        progress = asyncio.Event()

        async def read() -> None:
            nonlocal got, frames, longest
            last = time.perf_counter()
            async for frame in client.stream("StreamAgentStateUpdates", {"conversationId": cid}):
                now = time.perf_counter()
                gaps.append(now - last)
                last = now
                got += len(frame.data)
                frames += 1
                steps = (frame.payload or {}).get("update", {}).get("mainTrajectoryUpdate", {})
                for s in steps.get("stepsUpdate", {}).get("steps", []):
                    longest = max(longest, len(s.get("plannerResponse", {}).get("modifiedResponse", "")))
                progress.set()

        reader = asyncio.create_task(read())
        while not frames:
            await asyncio.sleep(0.01)
        t0 = time.perf_counter()
        n = 0
        gaps.clear()
        while got < target:
            n += 1
            text = "x" * (size * (n % 200 + 1) // 200)  # grows to 100 KB, then a new reply
            step["plannerResponse"]["modifiedResponse"] = text
            sim._changed(cascade, index)
            while longest < len(text) and got < target:
                progress.clear()
                await asyncio.wait_for(progress.wait(), 30)
            longest = 0
        wall = time.perf_counter() - t0
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    worst = max(gaps) * 1e3
    print(f"{got / 1e6:.0f} MB in {frames} frames through one client in {wall:.1f} s ({got / 1e6 / wall:.0f} MB/s); "
          f"longest gap between frames {worst:.1f} ms (target <= 100 ms: {'met' if worst <= 100 else 'MISSED'})")  # fmt: skip
    print(f"probe streams left open at agy after the version gate: {leaked_open} (target 0: "
          f"{'met' if leaked_open == 0 else 'MISSED'})")  # fmt: skip
    write_summary("volume", {"mb": got / 1e6, "frames": frames, "seconds": wall, "max_gap_ms": worst,
                             "leaked_open": leaked_open})  # fmt: skip
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=int, default=100)
    quiet_logs()
    print(f"volume through one session ({machine()})")
    return asyncio.run(amain(p.parse_args().mb))


if __name__ == "__main__":
    sys.exit(main())
