"""Huge input from agy: a 200 MB answer and a 50 MB step, with the RSS growth and the gate latency.

    python benchmarks/bench_bounded.py [--answer-mb 200] [--step-mb 50]

agy (the simulator) runs in a process of its own, so the figures are the harness's alone.

* ``answer``: one ``GetCascadeTrajectorySteps`` answer of ``--answer-mb`` MB (four steps of a
  quarter each), read by a bare ``RpcClient`` with the limits (long strings cut as they arrive) and
  then with them lifted (the whole body read and parsed, as before issue #20). Then an answer of the
  same size made of 100 KB steps (nothing to cut): refused at the 64 MiB limit. Reported: wall
  time and RSS growth (the process's peak RSS, ``ru_maxrss``, before and after each read; the reads
  run from the smallest expected peak to the largest).
* ``step``: a conversation holding one ``--step-mb`` MB step, followed through ``open_session``
  (stream, version gate, default adapters): the time to bind and to have the history (the stream's
  first batch; most of it is the simulator producing 50 MB), then a ``run: git status`` turn and
  the time until its approval card (GateOpened) reaches the sink, against the same on a
  conversation without the step; the event loop's longest stall (a 10 ms ticker's worst
  overshoot), the harness's CPU time and its RSS growth over the session.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from common import machine, quiet_logs, write_summary

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.errors import RpcBadResponse
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer

MB = 1 << 20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def serve(sizes: list[int]) -> None:
    """The child: a simulator whose conversation holds one step of each size (bytes), then idle."""
    from agy_harness.adapters.simulator import Simulator

    async with Simulator(pace=0, gate_timeout=None) as sim:
        for i, size in enumerate(sizes):
            await sim.send_agent_message(sim.cascade_id, f"BIG-{i} " + "x" * size)
        print(f"port {sim.port}\ncascade {sim.cascade_id}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent goes


@contextlib.contextmanager
def agy(sizes: list[int]) -> Iterator[tuple[int, str]]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", *map(str, sizes)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        cascade = proc.stdout.readline().split()[1]
        yield port, cascade
    finally:
        proc.kill()
        proc.wait(10)


async def read_answer(port: int, cascade: str, *, limits: bool) -> dict[str, Any]:
    before = peak_mb()
    start = time.perf_counter()
    async with RpcClient(f"https://127.0.0.1:{port}", timeout=300) as client:
        if not limits:
            client.max_body = client.max_string = 1 << 40
        try:
            answer = await client.call("GetCascadeTrajectorySteps", {"cascadeId": cascade})
            outcome = f"{len(json.dumps(answer)) / MB:.1f} MB kept"
        except RpcBadResponse as exc:
            outcome = f"refused ({exc.message[:60]})"
        answer = {}
    return {"wall_s": time.perf_counter() - start, "rss_growth_mb": peak_mb() - before, "outcome": outcome}


class GateClock:
    """A sink noting when each event arrives; approves every gate."""

    def __init__(self) -> None:
        self.events: list[tuple[float, Event]] = []
        self.changed = asyncio.Event()

    async def deliver(self, events: Any) -> int:
        now = time.perf_counter()
        self.events.extend((now, e) for e in events)
        self.changed.set()
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return GateAnswer(allow=True)

    async def withdraw(self, gate_id: str) -> None:
        return None

    async def until(self, kind: type[Event], after: float, timeout: float = 120) -> float:
        async with asyncio.timeout(timeout):
            while True:
                for at, event in self.events:
                    if at >= after and isinstance(event, kind):
                        return at
                self.changed.clear()
                await self.changed.wait()


async def follow(port: int, cascade: str) -> dict[str, Any]:
    stall = 0.0
    stop = False

    async def ticker() -> None:
        nonlocal stall
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            stall = max(stall, time.perf_counter() - t - 0.01)

    before = peak_mb()
    tick = asyncio.create_task(ticker())
    sink = GateClock()
    start = time.perf_counter()
    cpu = time.process_time()
    async with open_session(port=port, cascade_id=cascade, sink=sink) as session:
        bound = time.perf_counter() - start
        stats = session.harness.stats
        async with asyncio.timeout(120):
            while not stats.batches.get("stream"):  # the history (the big step) is in
                await asyncio.sleep(0.01)
        history = time.perf_counter() - start
        sent = time.perf_counter()
        await session.send("run: git status")
        gate_s = await sink.until(GateOpened, sent) - sent
        source = session.harness.stats.current_source
        errors = session.harness.stats.source_errors
    cpu = time.process_time() - cpu
    stop = True
    await tick
    return {
        "bind_s": bound,
        "history_s": history,
        "cpu_s": cpu,
        "gate_ms": gate_s * 1000,
        "stall_ms": stall * 1000,
        "rss_growth_mb": peak_mb() - before,
        "source": source,
        "source_errors": errors,
    }


async def amain(answer_mb: int, step_mb: int) -> None:
    print(f"# {machine()}")
    figures: dict[str, Any] = {"answer_mb": answer_mb, "step_mb": step_mb}
    # the step first (the smallest peak), then the answers: ru_maxrss only ever grows
    with agy([]) as (port, cascade):
        plain = await follow(port, cascade)
    with agy([step_mb * MB]) as (port, cascade):
        big = await follow(port, cascade)
    figures["step"], figures["step_baseline"] = big, plain
    print(f"{step_mb} MB step, followed: bind {big['bind_s']:.2f} s, history in {big['history_s']:.2f} s "
          f"(harness CPU {big['cpu_s']:.2f} s in all, without the step {plain['cpu_s']:.2f} s), then a gate "
          f"{big['gate_ms']:.0f} ms after its turn "
          f"(without it {plain['gate_ms']:.0f} ms), longest loop stall {big['stall_ms']:.0f} ms "
          f"(without {plain['stall_ms']:.0f} ms), RSS +{big['rss_growth_mb']:.0f} MB, source {big['source']}, "
          f"{big['source_errors']} source errors")  # fmt: skip
    with agy([answer_mb * MB // 4] * 4) as (port, cascade):
        cut = await read_answer(port, cascade, limits=True)
        figures["answer_cut"] = cut
        print(
            f"{answer_mb} MB answer (4 steps), limits on: {cut['wall_s']:.2f} s, RSS +{cut['rss_growth_mb']:.0f} MB, {cut['outcome']}"
        )
        small = answer_mb * MB // (100 * 1024)
    with agy([100 * 1024] * small) as (port, cascade):
        refused = await read_answer(port, cascade, limits=True)
        figures["answer_refused"] = refused
        print(f"{answer_mb} MB answer ({small} steps of 100 KB), limits on: {refused['wall_s']:.2f} s, "
              f"RSS +{refused['rss_growth_mb']:.0f} MB, {refused['outcome']}")  # fmt: skip
    with agy([answer_mb * MB // 4] * 4) as (port, cascade):
        whole = await read_answer(port, cascade, limits=False)
        figures["answer_whole"] = whole
        print(f"{answer_mb} MB answer (4 steps), limits lifted (as before): {whole['wall_s']:.2f} s, "
              f"RSS +{whole['rss_growth_mb']:.0f} MB, {whole['outcome']}")  # fmt: skip
    write_summary("bounded", figures)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answer-mb", type=int, default=200)
    parser.add_argument("--step-mb", type=int, default=50)
    parser.add_argument("--serve", type=int, nargs="*")
    args = parser.parse_args()
    if args.serve is not None:
        asyncio.run(serve(args.serve))
        return 0
    quiet_logs()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    asyncio.run(amain(args.answer_mb, args.step_mb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
