"""Diagnostic: N server-streams plus one unary call on ONE RpcClient (one HTTP/2 connection).

    python benchmarks/probe_shared_client.py

Opens N ``StreamAgentStateUpdates`` on one client against the in-process simulator (started one
after the other, 50 ms apart), then sends one Heartbeat with a 2 s deadline. Prints, per N, how
many streams got their first (replay) frame and whether the Heartbeat came back. The simulator's
server multiplexes the same requests fine for curl (nghttp2) on one connection, so a failure here
is on the client side (httpx 0.29 / httpcore 1.0 HTTP/2).
"""

from __future__ import annotations

import asyncio
import sys

from common import machine, quiet_logs, write_summary

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator


async def probe(n: int) -> tuple[int, bool]:
    async with Simulator(pace=0) as sim:
        cascades = [await sim.start_cascade() for _ in range(n)]
        client = RpcClient(sim.base_url)
        got = [0] * n

        async def consume(i: int, cascade: str) -> None:
            async for _frame in client.stream("StreamAgentStateUpdates", {"conversationId": cascade}):
                got[i] += 1

        tasks = []
        for i, c in enumerate(cascades):
            tasks.append(asyncio.create_task(consume(i, c)))
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        try:
            async with asyncio.timeout(2):
                await client.call("Heartbeat", {})
            ok = True
        except TimeoutError:
            ok = False
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.aclose()
        return sum(1 for g in got if g), ok


async def amain() -> int:
    print(f"N streams + 1 Heartbeat on one RpcClient ({machine()})")
    results = {}
    for n in (1, 2, 3, 4, 6):
        framed, ok = await probe(n)
        results[n] = {"streams_with_frames": framed, "heartbeat_ok": ok}
        print(
            f"  {n} streams: {framed}/{n} got their replay frame; heartbeat {'ok' if ok else 'STUCK (2 s)'}"
        )
    write_summary("shared_client", results)
    return 0


if __name__ == "__main__":
    quiet_logs()
    sys.exit(asyncio.run(amain()))
