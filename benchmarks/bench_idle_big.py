"""CPU per poll of an idle conversation holding 33 MB of steps: whole reads vs ``stepOffset`` reads.

    python benchmarks/bench_idle_big.py [--polls 10] [--mb 33]

Issue #35 case 9: with the stream down, every poll re-read, re-decoded and compared every step. The
simulator runs in its own thread (its own event loop), so ``time.thread_time`` of the main thread is
the harness side only. One conversation gets ``--mb`` MB of finished steps (3 MB SYSTEM_MESSAGE steps,
each string under the 4 MiB cut), then ``RpcPollSource`` (250 ms) polls it ``--polls`` times:

* ``whole``: every poll reads the whole list (the poll before stepOffset: ``offset_reads = False``);
* ``offset``: every poll asks only for the steps past the settled ones (the default).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from typing import Any

from common import machine, quiet_logs, write_summary

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.adapters.simulator import Simulator

CHUNK = 3_000_000


def simulator_thread(mb: int) -> tuple[dict[str, Any], threading.Event]:
    info: dict[str, Any] = {}
    ready, stop = threading.Event(), threading.Event()

    async def run() -> None:
        async with Simulator(profile="1.0.10", gate_timeout=None) as sim:
            for i in range(max(1, mb * 1_000_000 // CHUNK)):
                await sim.send_agent_message(sim.cascade_id, f"{i} " + "x" * CHUNK)
            info.update(base_url=sim.base_url, cascade=sim.cascade_id)
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)

    threading.Thread(target=lambda: asyncio.run(run()), daemon=True).start()
    ready.wait(120)
    return info, stop


async def measure(info: dict[str, Any], polls: int, offset: bool) -> dict[str, float]:
    async with RpcClient(info["base_url"]) as client:
        source = RpcPollSource(client, interval=0.25)
        source.offset_reads = offset
        batches = source.batches(info["cascade"])
        await anext(batches)  # the first read (whole, either way): not counted
        seen = 0

        async def drain() -> None:
            nonlocal seen
            async for _ in batches:
                seen += 1

        start_polls, cpu0, wall0 = source.polls, time.thread_time(), time.monotonic()
        task = asyncio.ensure_future(drain())
        while source.polls < start_polls + polls:
            await asyncio.sleep(0.05)
        cpu, wall = time.thread_time() - cpu0, time.monotonic() - wall0
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        done = source.polls - start_polls
        return {"cpu_ms_per_poll": cpu * 1000 / done, "cpu_pct": 100 * cpu / wall, "batches": float(seen)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--polls", type=int, default=10)
    parser.add_argument("--mb", type=int, default=33)
    args = parser.parse_args()
    quiet_logs()
    info, stop = simulator_thread(args.mb)
    try:
        whole = asyncio.run(measure(info, args.polls, offset=False))
        offset = asyncio.run(measure(info, args.polls, offset=True))
    finally:
        stop.set()
    print(f"idle conversation with {args.mb} MB of steps, {args.polls} polls at 250 ms ({machine()})")
    for name, f in (("whole", whole), ("offset", offset)):
        print(
            f"  {name:7s} {f['cpu_ms_per_poll']:9.2f} ms CPU/poll  {f['cpu_pct']:6.1f} % CPU  "
            f"{f['batches']:.0f} snapshots re-fed"
        )
    write_summary(
        "idle_big",
        {
            "mb": args.mb,
            "whole_ms_per_poll": whole["cpu_ms_per_poll"],
            "offset_ms_per_poll": offset["cpu_ms_per_poll"],
        },
    )


if __name__ == "__main__":
    main()
