"""300 active sessions on one event loop: is the loop saturated?

    python benchmarks/bench_active.py [--sessions 300] [--pace 0.2] [--rounds 3]

The simulator runs in its own process. ``--sessions`` conversations (StartCascade) are opened with
``open_session`` on one asyncio loop (each its own RpcClient, as with one agy a session); then every
session starts a long reply at once (~50 streamed text chunks each, one every ``0.1 * pace`` s) and
they all stream together. Measured while they run: this process's CPU (100 % = one core: a
saturated loop), the loop's lag (a 10 ms ticker: how late it wakes; p50/p99/max), and how long
until every reply was committed; ``--rounds`` times (3) on the same sessions. The sinks count events
and keep none (``common.CountingSink``: what a forwarding sink leaves in the harness's process). Target: the loop not
saturated: CPU < 100 % of a core and a p99 lag of at most 100 ms in every round.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import sys
import time
from typing import Any

from bench_idle import OwnDirectory
from common import CountingSink, machine, percentile, quiet_logs, simulator_process, write_summary

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.composition.root.session import open_session

PROMPT = "Write a long story about a lighthouse keeper."
#: a round is given up (an error: the replies stopped coming) only after this long without one more
#: delta or reply committed anywhere; a slow round (a loaded machine) is waited for and measured
STALL = 120.0


def say(text: str) -> None:
    print(text, flush=True)  # under run_all.py stdout is a pipe: what was printed survives a failure


async def committed(sinks: list[CountingSink], rnd: int) -> None:
    """Until every session's reply of round ``rnd`` is committed (its sink counted it); RuntimeError
    when nothing at all arrived for :data:`STALL` seconds."""
    loop = asyncio.get_running_loop()
    seen, since = -1, loop.time()
    while (done := sum(s.counts.get("assistant_message", 0) > rnd for s in sinks)) < len(sinks):
        progress = sum(s.counts.get("text_delta", 0) + s.counts.get("assistant_message", 0) for s in sinks)
        if progress != seen:
            seen, since = progress, loop.time()
        elif loop.time() - since > STALL:
            raise RuntimeError(
                f"round {rnd + 1}: {done} of {len(sinks)} replies committed, none progressed in {STALL:.0f} s"
            )
        await asyncio.sleep(0.05)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t = loop.time()
        await asyncio.sleep(0.01)
        lags.append((loop.time() - t - 0.01) * 1e3)


async def amain(sessions: int, pace: float, rounds: int = 3) -> int:
    say(f"{sessions} active sessions on one loop, a long reply each at once ({machine()})")
    try:
        return await measure(sessions, pace, rounds)
    except Exception as exc:  # said on stdout (run_all.py drops stderr): what failed, in one line
        say(f"bench_active failed: {type(exc).__name__}: {exc}")
        return 1


async def measure(sessions: int, pace: float, rounds: int) -> int:
    with simulator_process("--pace", str(pace)) as agy:
        base_url = f"https://127.0.0.1:{agy['port']}"
        async with RpcClient(base_url) as client:
            cascades = [(await client.call("StartCascade", {}))["cascadeId"] for _ in range(sessions)]
        sinks = [CountingSink() for _ in cascades]
        async with contextlib.AsyncExitStack() as stack:
            t0 = time.perf_counter()
            opened = []
            for cascade, sink in zip(cascades, sinks, strict=True):
                s = await stack.enter_async_context(
                    open_session(base_url=base_url, cascade_id=cascade, sink=sink)
                )
                s.harness.directory = OwnDirectory(s.harness.directory, lambda h=s.harness: h)
                opened.append(s)
            setup = time.perf_counter() - t0
            say(f"setup {setup:.1f} s ({sessions} sessions opened)")
            runs: list[tuple[float, float, list[float]]] = []  # (wall, cpu, lags) of each round
            for rnd in range(rounds):  # a reply each at once, ``rounds`` times on the same sessions
                lags: list[float] = []
                stop = asyncio.Event()
                tick = asyncio.create_task(ticker(lags, stop))
                c0, w0 = cpu(), time.perf_counter()
                await asyncio.gather(*(s.send(PROMPT) for s in opened))
                try:
                    await committed(sinks, rnd)
                finally:
                    stop.set()
                    await tick
                runs.append((time.perf_counter() - w0, cpu() - c0, lags))
                say(f"round {rnd + 1}: {sessions} replies committed in {runs[-1][0]:.1f} s, loop lag p99 "
                    f"{percentile(lags, 99):.0f} ms")  # fmt: skip
            deltas = sum(sink.counts.get("text_delta", 0) for sink in sinks)
    wall, used = sum(r[0] for r in runs), sum(r[1] for r in runs)
    lags = [lag for r in runs for lag in r[2]]
    pct = 100 * used / wall
    f: dict[str, Any] = {
        "sessions": sessions, "setup_s": setup, "wall_s": wall, "cpu_pct": pct, "deltas": deltas,
        "lag_p50_ms": percentile(lags, 50), "lag_p99_ms": percentile(lags, 99), "lag_max_ms": max(lags),
        "rounds": rounds, "lag_p99_ms_runs": [percentile(r[2], 99) for r in runs],
    }  # fmt: skip
    say(f"setup {setup:.1f} s; {rounds} rounds of {sessions} replies at once, committed in {wall:.1f} s in all "
          f"({deltas} text deltas); loop lag p99 per round: "
          + ", ".join(f"{x:.0f} ms" for x in f["lag_p99_ms_runs"]))  # fmt: skip
    ok = pct < 100 and max(f["lag_p99_ms_runs"]) <= 100
    say(f"CPU {pct:.0f} % of one core, target < 100 % with loop lag p99 <= 100 ms: {'met' if ok else 'MISSED'}; loop lag p50 "
          f"{f['lag_p50_ms']:.1f} ms, p99 {f['lag_p99_ms']:.1f} ms, max {f['lag_max_ms']:.1f} ms")  # fmt: skip
    write_summary("active", f)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=300)
    p.add_argument("--pace", type=float, default=0.2)
    p.add_argument("--rounds", type=int, default=3, help="rounds of a reply each at once")
    quiet_logs()
    args = p.parse_args()
    return asyncio.run(amain(args.sessions, args.pace, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
