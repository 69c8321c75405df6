"""CPU of 100 idle sessions on one event loop: stream vs poll-only.

    python benchmarks/bench_idle.py [--sessions 100] [--seconds 10] [--no-shared]

The simulator runs in its own process (``python -m agy_harness.adapters.simulator --pace 0``), so
this process's CPU time (``resource.getrusage``) is the harness side only; the simulator's CPU is
shown beside it (psutil) for context. 100 cascades are made with ``StartCascade`` and get one short
turn each (so every session replays some history), then, on ONE asyncio loop, for each mode:

* ``stream``: 100 sessions through ``open_session`` (the public API: version gate, stream + poll
  fallback, RPC turn-send, directory check every 1 s), each with its own RpcClient (one HTTP/2
  connection a session, as with one agy a session);
* ``poll``: 100 sessions from the same container with the capabilities given as "no stream", so
  the version gate picks ``RpcPollSource`` (default 250 ms) as the only source, each with its own
  RpcClient;
* ``shared``: 100 stream sessions on ONE shared RpcClient (the container's ``client`` overridden:
  what a multi-session server on one agy might do); shows whether unary calls still get through
  next to 100 open streams.

After the replays are delivered the sessions idle for ``--seconds``; CPU % = CPU seconds / wall
seconds (100 % = one core busy). Also counted: unary RPC calls/s and events delivered while idle
(should be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import psutil
from common import TimedSink, machine, quiet_logs, ratio, simulator_process, write_summary
from dependency_injector import providers

from agy_harness.adapters.rpc.actions import RpcCascadeDirectory, parse_summaries
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.composition.root.container import make_container
from agy_harness.composition.root.session import session_from
from agy_harness.composition.root.version_gate import Capabilities
from agy_harness.composition.service.harness import Harness
from agy_harness.ports.protocols import CascadeSummary

FORCED = {  # mode -> what the version gate is told this agy can do
    "poll": Capabilities(None, stream=False, rpc_turns=True),
    "shared": Capabilities(None, stream=True, rpc_turns=True),
}


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class OwnDirectory:
    """The session's view of agy's cascade list narrowed to its own conversation (and sub-agents).

    Here 100 conversations share one simulator; with one agy a session each sees only its own. The
    harness's rotation check takes ANY root cascade with newer user input for a ``/clear`` of the
    bound one (core/rotation.py ``rotation_target``), so unfiltered, 99 of the 100 sessions jump to
    the newest cascade within a second. The RPC call and its parsing are still paid in full.
    """

    def __init__(self, inner: RpcCascadeDirectory, harness: Callable[[], Harness]) -> None:
        self._inner = inner
        self._harness = harness  # the container's harness provider: the session's one harness

    async def list_cascades(self) -> list[CascadeSummary]:
        bound = self._harness().cascade_id
        return [
            s for s in await self._inner.list_cascades() if bound in (s.cascade_id, s.parent_id, s.root_id)
        ]


class Counter:
    """Counts (and times out) unary calls made through the clients it wraps."""

    def __init__(self) -> None:
        self.calls = 0
        self.pending = 0

    def wrap(self, client: RpcClient) -> RpcClient:
        original = client.call

        async def call(method: str, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
            self.calls += 1
            self.pending += 1
            try:
                return await original(method, body, **kw)
            finally:
                self.pending -= 1

        client.call = call  # type: ignore[method-assign]
        return client


async def make_cascades(base_url: str, sessions: int) -> list[str]:
    async with RpcClient(base_url) as client:
        cascades = [(await client.call("StartCascade", {}))["cascadeId"] for _ in range(sessions)]
        await asyncio.gather(
            *(
                client.call("SendUserCascadeMessage", {"cascadeId": c, "items": [{"text": "hello"}]})
                for c in cascades
            )
        )
        async with asyncio.timeout(20):  # every scripted turn finishes
            while True:
                summaries = (await client.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"]
                if all(
                    summaries[c]["status"].endswith("IDLE") and summaries[c]["stepCount"] for c in cascades
                ):
                    return cascades
                await asyncio.sleep(0.1)


async def settle(sinks: list[TimedSink], timeout: float = 4.0) -> None:
    """Until every session delivered its replay and nothing moved for 0.5 s."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    last, since = -1, loop.time()
    while loop.time() < end:
        n = sum(len(s.events) for s in sinks)
        if n != last:
            last, since = n, loop.time()
        elif all(s.events for s in sinks) and loop.time() - since >= 0.5:
            return
        await asyncio.sleep(0.05)


async def measure(
    mode: str, base_url: str, cascades: list[str], seconds: float, sim_pid: int, own_view: bool
) -> dict[str, Any]:
    counter = Counter()
    sinks = [TimedSink() for _ in cascades]
    sim = psutil.Process(sim_pid)
    t_setup = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        harnesses: list[Harness] = []
        shared = RpcClient(base_url) if mode == "shared" else None
        if shared is not None:
            stack.push_async_callback(shared.aclose)
            counter.wrap(shared)
        for cascade, sink in zip(cascades, sinks, strict=True):
            container = make_container(base_url=base_url, cascade_id=cascade, sink=sink)
            if shared is not None:  # given, so not closed by the session
                container.client.override(providers.Object(shared))
            else:
                counter.wrap(container.client())
            if mode in FORCED:  # the version gate's choice from given capabilities (no probe)
                container.capabilities.override(providers.Object(FORCED[mode]))
            if own_view:
                inner = RpcCascadeDirectory(container.client())
                container.directory.override(providers.Object(OwnDirectory(inner, container.harness)))
            s = await stack.enter_async_context(session_from(container))
            harnesses.append(s.harness)
        setup = time.perf_counter() - t_setup
        await settle(sinks)
        before = sum(len(s.events) for s in sinks)
        counter.calls = 0
        c0, s0, t0 = cpu(), sum(sim.cpu_times()[:2]), time.perf_counter()
        await asyncio.sleep(seconds)
        wall = time.perf_counter() - t0
        used, sim_used = cpu() - c0, sum(sim.cpu_times()[:2]) - s0
        figures = {
            "sessions": len(cascades),
            "seconds": wall,
            "setup_s": setup,
            "cpu_pct": 100 * used / wall,
            "cpu_pct_per_session": 100 * used / wall / len(cascades),
            "sim_cpu_pct": 100 * sim_used / wall,
            "calls_per_s": counter.calls / wall,
            "calls_stuck": counter.pending,
            "idle_events": sum(len(s.events) for s in sinks) - before,
            "replayed_events": before,
            "silent_sessions": sum(not s.events for s in sinks),
            "rotations": sum(e.type == "rotation" for s in sinks for _, e in s.events),
            "sources": sorted({k for h in harnesses for k in h.stats.batches}),
            "source_errors": sum(h.stats.source_errors for h in harnesses),
        }
        t_stop = time.perf_counter()
    figures["teardown_s"] = time.perf_counter() - t_stop
    return figures


def show(mode: str, f: dict[str, Any]) -> None:
    print(
        f"{mode:6} CPU {f['cpu_pct']:6.2f} % of one core in all, {f['cpu_pct_per_session']:.3f} % a session; "
        f"{f['calls_per_s']:.0f} unary calls/s ({f['calls_stuck']} in flight at the end); "
        f"simulator process {f['sim_cpu_pct']:.1f} %"
    )
    print(
        f"       setup {f['setup_s']:.1f} s, teardown {f['teardown_s']:.1f} s; {f['replayed_events']} replayed "
        f"events ({f['silent_sessions']} sessions got none), {f['idle_events']} while idle, "
        f"{f['rotations']} rotations; sources {f['sources']}, {f['source_errors']} source errors"
    )


async def call_costs(base_url: str, cascade: str, n: int = 200) -> dict[str, float]:
    """CPU ms per unary call on one warm HTTP/2 connection (this process only), to attribute the idle
    figures: a Heartbeat, the directory check (GetAllCascadeTrajectories: all 100 summaries, parsed
    to CascadeSummary), and one poll (GetCascadeTrajectorySteps of a 6-step cascade)."""
    out: dict[str, float] = {}
    async with RpcClient(base_url) as client:
        directory = RpcCascadeDirectory(client)
        poll = RpcPollSource(client)
        probes: dict[str, Any] = {
            "heartbeat": lambda: client.call("Heartbeat", {}),
            "directory": directory.list_cascades,
            "poll": lambda: poll.read_steps(cascade),
        }
        for name, probe in probes.items():
            await probe()
            c0 = cpu()
            for _ in range(n):
                await probe()
            out[name] = (cpu() - c0) / n * 1e3
        answer = await client.call("GetAllCascadeTrajectories", {})
        c0 = cpu()
        for _ in range(n):
            parse_summaries(answer)
        out["directory_parse"] = (cpu() - c0) / n * 1e3
    return out


async def one_mode(mode: str, sessions: int, seconds: float, own_view: bool) -> dict[str, Any]:
    """A fresh simulator process for each mode, so one mode's load cannot leak into the next."""
    with simulator_process("--pace", "0") as agy:
        base_url = f"https://127.0.0.1:{agy['port']}"
        cascades = await make_cascades(base_url, sessions)
        if mode == "stream":
            costs = await call_costs(base_url, cascades[0])
            print(
                "CPU per unary call: "
                + ", ".join(f"{k} {v:.2f} ms" for k, v in costs.items())
                + f" (directory lists {sessions} cascades)"
            )
            write_summary("call_costs", costs)
        async with asyncio.timeout(seconds + 30):
            return await measure(mode, base_url, cascades, seconds, agy["pid"], own_view)


async def amain(sessions: int, seconds: float, modes: list[str], own_view: bool) -> int:
    print(f"{sessions} idle sessions on one loop, {seconds:.0f} s idle per mode ({machine()})")
    if not own_view:
        print("(unfiltered cascade list: the sessions rotate onto the newest cascade, see OwnDirectory)")
    results: dict[str, dict[str, Any]] = {}
    for mode in modes:
        window = min(seconds, 5.0) if mode == "shared" else seconds  # a diagnostic: short
        results[mode] = await one_mode(mode, sessions, window, own_view)
        show(mode, results[mode])
    r = ratio(results["poll"]["cpu_pct"], results["stream"]["cpu_pct"])
    print(f"ratio poll/stream CPU: {r:.1f}x")
    if "shared" in results and results["shared"]["calls_stuck"]:
        print("shared: unary calls stuck next to the open streams; see probe_transports.py")
    write_summary("idle", {**results, "ratio_poll_stream": r})
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--seconds", type=float, default=10.0, help="idle window per mode")
    p.add_argument("--no-shared", action="store_true", help="skip the shared-client mode")
    p.add_argument(
        "--unfiltered", action="store_true", help="let every session see all 100 cascades (they rotate)"
    )
    args = p.parse_args()
    quiet_logs()
    modes = ["stream", "poll"] + ([] if args.no_shared else ["shared"])
    start = time.perf_counter()
    code = asyncio.run(amain(args.sessions, args.seconds, modes, not args.unfiltered))
    print(f"(took {time.perf_counter() - start:.1f} s)")
    return code


if __name__ == "__main__":
    sys.exit(main())
