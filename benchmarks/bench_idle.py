"""CPU of 100 idle sessions on one event loop.

    python benchmarks/bench_idle.py [--sessions 100] [--seconds 10]

The simulator runs in its own process (its CPU is not counted). 100 cascades with a finished turn
each; 100 harnesses on one loop, one HTTP/2 connection each, each with its stream open and its
directory check (1 s) running; then the same with the poll (250 ms) as the only source.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time

from common import TimedSink, machine, simulator_process

from agy_harness.adapters.rpc.actions import RpcCascadeDirectory
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
from agy_harness.composition.harness import Harness, HarnessOptions


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def idle(port: int, sessions: int, seconds: float, mode: str) -> tuple[float, int, float]:
    async with RpcClient(f"https://127.0.0.1:{port}") as client:
        cascades = []
        for _ in range(sessions):
            cascades.append((await client.call("StartCascade", {}))["cascadeId"])
        for cascade in cascades:
            await client.call("SendUserCascadeMessage", {"cascadeId": cascade, "items": [{"text": "hello"}]})
        await asyncio.sleep(1.0)  # every scripted turn finishes
    # one client (one HTTP/2 connection) a session, as with one agy a session: a single shared
    # connection would put 100 long-lived streams against HTTP/2's concurrent-stream limit
    clients = [RpcClient(f"https://127.0.0.1:{port}") for _ in cascades]
    calls = [0]

    def counting(c: RpcClient) -> RpcClient:
        original = c.call

        async def call(method: str, body: dict, **kw: object) -> dict:  # type: ignore[type-arg]
            calls[0] += 1
            return await original(method, body, **kw)  # type: ignore[arg-type]

        c.call = call  # type: ignore[method-assign]
        return c

    harnesses = [
        Harness(
            cascade_id=cascade,
            sources=[RpcStreamSource(c) if mode == "stream" else RpcPollSource(c, interval=0.25)],
            snapshot=RpcPollSource(c),
            sink=TimedSink(),
            directory=RpcCascadeDirectory(c),
            options=HarnessOptions(directory_interval=1.0),
        )
        for cascade, c in zip(cascades, map(counting, clients), strict=True)
    ]
    for h in harnesses:
        await h.start()
    await asyncio.sleep(3.0)  # replays delivered; from here on everything is idle
    delivered = sum(h.stats.events for h in harnesses)
    calls[0] = 0
    start_cpu, start = cpu(), time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - start
    used = (cpu() - start_cpu) / elapsed
    rate = calls[0] / elapsed
    for h in harnesses:
        await h.stop()
    for c in clients:
        await c.aclose()
    return used, delivered, rate


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--sessions", type=int, default=100)
    args.add_argument("--seconds", type=float, default=10.0)
    opts = args.parse_args()
    print(f"{opts.sessions} idle sessions on one loop, {opts.seconds:.0f} s ({machine()})")
    results = {}
    for mode in ("stream", "poll"):
        with simulator_process("--pace", "0") as agy:
            share, delivered, rate = asyncio.run(idle(agy["port"], opts.sessions, opts.seconds, mode))
        results[mode] = share
        print(
            f"  {mode:6} CPU {share * 100:6.2f} % of one core in all, {share * 100 / opts.sessions:.3f} % a session,"
            f" {rate:.0f} unary calls/s ({delivered} replayed events delivered first)"
        )
    print(f"  poll / stream CPU: {results['poll'] / max(results['stream'], 1e-9):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
