"""Transport probe: N long-lived StreamAgentStateUpdates + unary calls against ONE agy, per HTTP stack.

    python benchmarks/probe_transports.py [--streams 100 300] [--calls 200] [--rounds 3]

The simulator runs in its own process (pace 0), so this process's CPU is the client side only.
For each candidate stack and each N: open N streams (one per cascade, from StartCascade), wait
for their replay frames, then make ``--rounds`` rounds of ``--calls`` sequential Heartbeat calls,
each with a 2 s deadline that the probe enforces itself (``asyncio.timeout``) so a wedged stack
shows as misses, never as a hung probe. Reported per stack: streams that got their replay, call
p50/p99 (ms), CPU ms per call (this process's user + system time over each round's calls only:
the median round, and every round's figure), and deadline misses.

CPU time is not free of the machine's load: on 2 shared cores a call that waits longer for its
answer (the other processes run first) costs more CPU too (cold caches after each wait); the same
tree measured 0.33-0.41 ms a call quiet and 0.42-0.70 ms next to two busy processes. Hence the
rounds and their spread.

Stacks:

* ``httpx-h2-shared``: one ``httpx.AsyncClient(http2=True)`` for everything (the old RpcClient);
* ``httpx-h2-per-stream``: one HTTP/2 client per stream, a shared one for calls;
* ``httpx-h1``: one HTTP/1.1 ``httpx.AsyncClient`` (a pooled connection per request in flight);
* ``aiohttp-h1``: one ``aiohttp.ClientSession`` (HTTP/1.1, a connection per stream, keep-alive
  pool for calls): what ``RpcClient`` uses now;
* ``rpc-client``: the harness's own ``RpcClient`` on that stack, everything it does on the way
  (the listener owner check before each new connection, the bounded body reader, the JSON parse).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import statistics
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import httpx
from common import machine, percentile, quiet_logs, simulator_process, write_summary

from agy_harness.adapters.rpc.client import RpcClient

SERVICE = "exa.language_server_pb.LanguageServerService"
HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
STREAM_HEADERS = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
DEADLINE = 2.0


def envelope(obj: Any) -> bytes:
    data = json.dumps(obj).encode()
    return struct.pack(">BI", 0, len(data)) + data


class Stack:
    name = ""

    async def call(self, url: str, body: dict[str, Any]) -> None:
        raise NotImplementedError

    async def stream(self, url: str, body: dict[str, Any], on_chunk: Callable[[], None]) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


class HttpxStack(Stack):
    def __init__(self, name: str, *, http2: bool, per_stream: bool) -> None:
        self.name = name
        self._http2 = http2
        self._per_stream = per_stream
        self._client = self._new()
        self._extra: list[httpx.AsyncClient] = []

    def _new(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            http2=self._http2, verify=False, limits=httpx.Limits(max_connections=None), timeout=None
        )

    async def call(self, url: str, body: dict[str, Any]) -> None:
        resp = await self._client.post(url, content=json.dumps(body).encode(), headers=HEADERS)
        resp.raise_for_status()

    async def stream(self, url: str, body: dict[str, Any], on_chunk: Callable[[], None]) -> None:
        client = self._client
        if self._per_stream:
            client = self._new()
            self._extra.append(client)
        async with client.stream("POST", url, content=envelope(body), headers=STREAM_HEADERS) as resp:
            async for _chunk in resp.aiter_bytes():
                on_chunk()

    async def aclose(self) -> None:
        for c in [self._client, *self._extra]:
            await c.aclose()


class AiohttpStack(Stack):
    name = "aiohttp-h1"

    def __init__(self) -> None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=ctx))

    async def call(self, url: str, body: dict[str, Any]) -> None:
        async with self._session.post(url, data=json.dumps(body).encode(), headers=HEADERS) as resp:
            await resp.read()
            resp.raise_for_status()

    async def stream(self, url: str, body: dict[str, Any], on_chunk: Callable[[], None]) -> None:
        async with self._session.post(url, data=envelope(body), headers=STREAM_HEADERS) as resp:
            async for _chunk in resp.content.iter_any():
                on_chunk()

    async def aclose(self) -> None:
        await self._session.close()


class RpcClientStack(Stack):
    name = "rpc-client"

    def __init__(self) -> None:
        self._client: RpcClient | None = None

    def _rpc(self, url: str) -> RpcClient:
        if self._client is None:
            self._client = RpcClient(url.split(f"/{SERVICE}/")[0], timeout=DEADLINE * 5)
        return self._client

    async def call(self, url: str, body: dict[str, Any]) -> None:
        await self._rpc(url).call(url.rsplit("/", 1)[1], body)

    async def stream(self, url: str, body: dict[str, Any], on_chunk: Callable[[], None]) -> None:
        async for _frame in self._rpc(url).stream(url.rsplit("/", 1)[1], body):
            on_chunk()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


STACKS: dict[str, Callable[[], Stack]] = {
    "httpx-h2-shared": lambda: HttpxStack("httpx-h2-shared", http2=True, per_stream=False),
    "httpx-h2-per-stream": lambda: HttpxStack("httpx-h2-per-stream", http2=True, per_stream=True),
    "httpx-h1": lambda: HttpxStack("httpx-h1", http2=False, per_stream=False),
    "aiohttp-h1": AiohttpStack,
    "rpc-client": RpcClientStack,
}


async def _bounded(coro: Awaitable[None], seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await coro
        return True
    except TimeoutError:
        return False


async def probe(stack: Stack, base: str, cascades: list[str], calls: int, rounds: int) -> dict[str, Any]:
    url = f"{base}/{SERVICE}/"
    got = [0] * len(cascades)

    def counter(i: int) -> Callable[[], None]:
        def bump() -> None:
            got[i] += 1

        return bump

    tasks = [
        asyncio.create_task(stack.stream(url + "StreamAgentStateUpdates", {"conversationId": c}, counter(i)))
        for i, c in enumerate(cascades)
    ]
    end = time.perf_counter() + 10
    while sum(1 for g in got if g) < len(cascades) and time.perf_counter() < end:
        await asyncio.sleep(0.05)
    replayed = sum(1 for g in got if g)
    lat: list[float] = []
    misses = 0
    cpu_per_call: list[float] = []  # ms, one figure a round
    # a stream may have taken the pooled connection: the first call dials (setup, not a call's cost)
    await _bounded(stack.call(url + "Heartbeat", {}), DEADLINE)
    for _ in range(rounds):
        if misses >= 3:  # wedged: stop paying 2 s a call
            break
        made = 0
        cpu0 = time.process_time()
        for _ in range(calls):
            t0 = time.perf_counter()
            ok = await _bounded(stack.call(url + "Heartbeat", {}), DEADLINE)
            made += 1
            if ok:
                lat.append((time.perf_counter() - t0) * 1000)
            else:
                misses += 1
                if misses >= 3:
                    break
        cpu_per_call.append((time.process_time() - cpu0) * 1000 / made)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await _bounded(stack.aclose(), 5)
    done = len(lat)
    return {
        "streams": len(cascades),
        "replayed": replayed,
        "calls_ok": done,
        "misses": misses,
        "call_p50_ms": percentile(lat, 50),
        "call_p99_ms": percentile(lat, 99),
        "cpu_ms_per_call": statistics.median(cpu_per_call),
        "cpu_ms_per_call_rounds": cpu_per_call,
    }


async def amain(args: argparse.Namespace) -> int:
    print(f"transport probe: N streams + {args.calls} Heartbeats on one agy ({machine()})")
    results: dict[str, Any] = {}
    with simulator_process("--pace", "0") as info:
        base = f"https://127.0.0.1:{info['port']}"
        setup = AiohttpStack()
        url = f"{base}/{SERVICE}/StartCascade"
        cascades: list[str] = []
        async with setup._session.post(url, data=b"{}", headers=HEADERS) as resp:
            cascades.append((await resp.json(content_type=None))["cascadeId"])
        while len(cascades) < max(args.streams):
            async with setup._session.post(url, data=b"{}", headers=HEADERS) as resp:
                cascades.append((await resp.json(content_type=None))["cascadeId"])
        await setup.aclose()
        for n in args.streams:
            for name in args.stacks:
                r = await probe(STACKS[name](), base, cascades[:n], args.calls, args.rounds)
                results[f"{name}/{n}"] = r
                print(
                    f"  {name:20s} {n:3d} streams: replayed {r['replayed']:3d}/{n}, calls ok {r['calls_ok']:3d}"
                    f" misses {r['misses']}, call p50 {r['call_p50_ms']:.2f} ms p99 {r['call_p99_ms']:.2f} ms,"
                    f" CPU {r['cpu_ms_per_call']:.2f} ms/call"
                    f" ({', '.join(f'{c:.2f}' for c in r['cpu_ms_per_call_rounds'])})",
                    flush=True,
                )
    write_summary("transports", results)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", type=int, nargs="+", default=[1, 100, 300])
    p.add_argument("--calls", type=int, default=200, help="Heartbeat calls a round")
    p.add_argument("--rounds", type=int, default=3, help="rounds of calls on the same open streams")
    p.add_argument("--stacks", nargs="+", default=list(STACKS), choices=list(STACKS))
    quiet_logs()
    return asyncio.run(amain(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
