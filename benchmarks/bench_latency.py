"""Frame→event latency on the simulator: stream source vs poll source.

    python benchmarks/bench_latency.py [--turns 8] [--pace 0.2]

The simulator (in this process, on one asyncio loop with the harness, TLS HTTP/2 on loopback)
streams ``--turns`` long replies (~50 text chunks each, one chunk every ``0.1 * pace`` s). A
``sim.subscribe`` hook stamps ``time.perf_counter()`` whenever a PLANNER_RESPONSE's text grows
(keyed by step key and text length); the event sink stamps every TextDelta it is handed.

Two figures per source:

* per change: for every text growth the simulator produced, the time until the sink first held
  text at least that long for that step (what a reader of the reply waits; counts coalescing);
* per delta: for every TextDelta delivered, the time since the simulator produced exactly the
  text length the delta ends at (the age of the newest text in that delta).

The stream source runs through ``open_session`` (the public API, default adapters); the poll
source through the same container with the capabilities given as "no stream", so the version gate
picks ``RpcPollSource`` alone (default 250 ms interval). Reports p50/p99/max in ms and the ratio poll/stream.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from common import machine, percentile, quiet_logs, ratio, write_summary
from dependency_injector import providers

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.container import make_container
from agy_harness.composition.root.session import open_session, session_from
from agy_harness.composition.root.version_gate import Capabilities
from agy_harness.ports.events import Event, GateOpened, TextDelta
from agy_harness.ports.protocols import GateAnswer

PROMPT = "Write a long story about a lighthouse keeper."


def step_key(step: dict[str, Any]) -> str:
    info = step.get("metadata", {}).get("sourceTrajectoryStepInfo", {})
    return f"{info.get('trajectoryId')}/{info.get('stepIndex', 0)}"


class Recorder:
    """The simulator side (step changes) and the sink side (TextDeltas), both perf_counter-stamped."""

    def __init__(self) -> None:
        self.produced: dict[str, list[tuple[int, float]]] = defaultdict(list)  # key -> (len, t)
        self.delivered: dict[str, list[tuple[int, float]]] = defaultdict(list)  # key -> (cum len, t)
        self._cum: dict[str, int] = defaultdict(int)
        self.assistant_messages = 0
        self.deltas = 0

    # simulator hook: cb(cascade_id, step) on every step change
    def on_step(self, _cascade_id: str, step: dict[str, Any]) -> None:
        t = time.perf_counter()
        if step.get("type") != "CORTEX_STEP_TYPE_PLANNER_RESPONSE":
            return
        body = step.get("plannerResponse") or {}
        text = body.get("modifiedResponse") or body.get("response") or ""
        seen = self.produced[step_key(step)]
        if text and (not seen or len(text) > seen[-1][0]):
            seen.append((len(text), t))

    # EventSink
    async def deliver(self, events: Sequence[Event]) -> int:
        t = time.perf_counter()
        for e in events:
            if isinstance(e, TextDelta) and e.delta:
                self._cum[e.step_key] += len(e.delta)
                self.delivered[e.step_key].append((self._cum[e.step_key], t))
                self.deltas += 1
            elif e.type == "assistant_message":
                self.assistant_messages += 1
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        await asyncio.Event().wait()  # no gates in this scenario
        raise AssertionError

    async def withdraw(self, gate_id: str) -> None:
        return None

    def latencies(self) -> tuple[list[float], list[float], int]:
        """(per change ms, per delta ms, changes never delivered)."""
        per_change: list[float] = []
        per_delta: list[float] = []
        missing = 0
        for key, produced in self.produced.items():
            delivered = self.delivered.get(key, [])
            lengths = [n for n, _ in delivered]
            for n, t0 in produced:
                i = bisect.bisect_left(lengths, n)
                if i == len(lengths):
                    missing += 1
                else:
                    per_change.append((delivered[i][1] - t0) * 1e3)
            at = dict(produced)
            for n, t1 in delivered:
                if n in at:
                    per_delta.append((t1 - at[n]) * 1e3)
        return per_change, per_delta, missing


async def drive(sim: Simulator, rec: Recorder, turns: int, cascade_id: str) -> None:
    for n in range(1, turns + 1):
        await sim.submit_user_turn(PROMPT, cascade_id=cascade_id)
        await sim.wait_idle(timeout=30)
        async with asyncio.timeout(10):
            while rec.assistant_messages < n:
                await asyncio.sleep(0.01)


async def run_stream(turns: int, pace: float) -> Recorder:
    rec = Recorder()
    async with Simulator(profile="1.0.10", pace=pace) as sim:
        sim.subscribe(rec.on_step)
        async with open_session(base_url=sim.base_url, cascade_id=sim.cascade_id, sink=rec) as s:
            assert s.capabilities.stream, "the simulator should offer the stream"
            await asyncio.sleep(0.2)  # let the stream open (its replay is empty)
            await drive(sim, rec, turns, sim.cascade_id)
            batches = dict(s.harness.stats.batches)
        assert set(batches) <= {"stream", "backstop"}, f"stream run used other sources: {batches}"
    return rec


async def run_poll(turns: int, pace: float) -> Recorder:
    rec = Recorder()
    async with Simulator(profile="1.0.10", pace=pace) as sim:
        sim.subscribe(rec.on_step)
        container = make_container(base_url=sim.base_url, cascade_id=sim.cascade_id, sink=rec)
        # the version gate told "no stream": the poll alone, at its default interval (0.25 s)
        container.capabilities.override(providers.Object(Capabilities(None, stream=False, rpc_turns=True)))
        async with session_from(container) as s:
            assert [source.name for source in s.harness.sources] == ["poll"]
            await drive(sim, rec, turns, sim.cascade_id)
    return rec


def report(name: str, rec: Recorder) -> dict[str, float]:
    change, delta, missing = rec.latencies()
    fig = {
        "changes": len(change),
        "deltas": rec.deltas,
        "missing": missing,
        "change_p50": percentile(change, 50),
        "change_p99": percentile(change, 99),
        "change_max": max(change, default=float("nan")),
        "delta_p50": percentile(delta, 50),
        "delta_p99": percentile(delta, 99),
        "delta_max": max(delta, default=float("nan")),
    }
    print(
        f"{name:6} per change: n={fig['changes']:4d}  p50 {fig['change_p50']:7.2f} ms  "
        f"p99 {fig['change_p99']:7.2f} ms  max {fig['change_max']:7.2f} ms  (undelivered {missing})"
    )
    print(
        f"{name:6} per delta:  n={len(delta):4d}  p50 {fig['delta_p50']:7.2f} ms  "
        f"p99 {fig['delta_p99']:7.2f} ms  max {fig['delta_max']:7.2f} ms  "
        f"({rec.deltas} TextDeltas delivered)"
    )
    return fig


async def amain(turns: int, pace: float) -> int:
    print(f"frame→event latency, {turns} long replies, chunk every {100 * pace:.0f} ms ({machine()})")
    t0 = time.perf_counter()
    stream = report("stream", await run_stream(turns, pace))
    poll = report("poll", await run_poll(turns, pace))
    for what in ("change_p50", "change_p99", "delta_p50", "delta_p99"):
        print(f"ratio poll/stream {what}: {ratio(poll[what], stream[what]):.1f}x")
    print(f"(took {time.perf_counter() - t0:.1f} s)")
    write_summary(
        "latency",
        {
            "stream": stream,
            "poll": poll,
            "ratio_change_p50": ratio(poll["change_p50"], stream["change_p50"]),
            "ratio_change_p99": ratio(poll["change_p99"], stream["change_p99"]),
        },
    )
    return 0 if stream["missing"] == 0 and poll["missing"] == 0 else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=8, help="long replies per source (~50 deltas each)")
    p.add_argument("--pace", type=float, default=0.2, help="simulator pace (chunk every 0.1*pace s)")
    args = p.parse_args()
    quiet_logs()
    return asyncio.run(asyncio.wait_for(amain(args.turns, args.pace), 55))


if __name__ == "__main__":
    sys.exit(main())
