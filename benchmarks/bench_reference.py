"""Us beside the reference (omnigent 0.19.1's antigravity-native harness) on the same inputs, one run.

    python benchmarks/bench_reference.py [--turns 6] [--pace 0.2]

The reference runs in its own Python 3.12 venv (``tests/real_omnigent.py`` builds it once under
``~/.cache/agy-harness/``: ``omnigent==0.19.1`` from the registry), through ``ref_worker.py``:

* mapper: its ``steps.map_step_to_events`` vs our ``Reconciler.feed`` (parse, map, dedup, live state)
  on the recorded fixtures renumbered x200 (none dedups); best of 5 each. Target: ours >= 2x.
* attach: a 10,000-step snapshot (settled recorded-shape steps) through its reader's stream path
  (``reader._process_stream_step``) vs our emitter (``Emitter.apply``, no cursor store); wall and
  CPU. Target: ours <= the reference.
* stream latency: one simulator (this process, pace ``--pace``) streams ``--turns`` long replies to
  each side; each side follows its own conversation from its own process (ours: ``our_worker.py``,
  ``open_session``; the reference: ``ref_worker.py``, its ``_stream_loop`` over httpx HTTP/1.1).
  Per change: from the simulator growing a reply's text (``sim.subscribe`` hook) to the first text
  delta that carries it reaching the consumer, both stamped with ``time.perf_counter()``
  (CLOCK_MONOTONIC, one clock for all processes). Targets: our p50 <= 0.5x its p50, p99 <= its p99.

Prints each figure with its ratio and whether the target is met.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_cursor import attach
from bench_mapper import FIXTURES, renumbered, throughput
from common import machine, percentile, quiet_logs, write_summary

from agy_harness.adapters.simulator import Simulator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROMPT = "Write a long story about a lighthouse keeper."


def reference_python() -> str:
    sys.path.insert(0, str(ROOT))
    from tests.real_omnigent import omnigent_venv  # builds the cached 3.12 venv once if missing

    return str(omnigent_venv() / "bin" / "python")


def ref_run(python: str, *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [python, str(HERE / "ref_worker.py"), *args], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(ratios: list[float]) -> str:
    """The range of a ratio over the repetitions: a claim holds only if it holds over all of them."""
    return f"({min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} runs)"


def verdict(ok: bool, miss: str) -> str:
    return "met" if ok else f"MISSED ({miss})"


class Produced:
    """Simulator side: when each reply's text grew, per (cascade, step index)."""

    def __init__(self) -> None:
        self.growth: dict[tuple[str, int], list[tuple[int, float]]] = defaultdict(list)

    def on_step(self, cascade_id: str, step: dict[str, Any]) -> None:
        t = time.perf_counter()
        if step.get("type") != "CORTEX_STEP_TYPE_PLANNER_RESPONSE":
            return
        body = step.get("plannerResponse") or {}
        text = body.get("modifiedResponse") or body.get("response") or ""
        info = step.get("metadata", {}).get("sourceTrajectoryStepInfo", {})
        seen = self.growth[(cascade_id, int(info.get("stepIndex", 0)))]
        if text and (not seen or len(text) > seen[-1][0]):
            seen.append((len(text), t))


def per_change(produced: Produced, cascade: str, events: list[list[Any]]) -> tuple[list[float], int]:
    """ms from each growth to the first delta whose cumulative text covers it; and how many never came."""
    delivered: dict[int, list[tuple[int, float]]] = defaultdict(list)
    cum: dict[int, int] = defaultdict(int)
    for t, idx, kind, n in events:
        if kind == "text_delta" and n:
            cum[idx] += n
            delivered[idx].append((cum[idx], t))
    out: list[float] = []
    missing = 0
    for (cid, idx), growth in produced.growth.items():
        if cid != cascade:
            continue
        got = delivered.get(idx, [])
        lengths = [n for n, _ in got]
        for n, t0 in growth:
            i = bisect.bisect_left(lengths, n)
            if i == len(lengths):
                missing += 1
            else:
                out.append((got[i][1] - t0) * 1e3)
    return out, missing


async def spawn(
    python: str, script: str, port: int, cascade: str, mode: str = "stream"
) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        python, str(HERE / script), mode, str(port), cascade,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line:
        raise RuntimeError(f"{script} exited before it was ready")
    return proc


async def collect(proc: asyncio.subprocess.Process) -> list[list[Any]]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    out = await asyncio.wait_for(proc.stdout.read(), 60)
    await proc.wait()
    return list(json.loads(out.decode().strip().splitlines()[-1])["events"])


async def latency(ref_python: str, turns: int, pace: float) -> dict[str, Any]:
    produced = Produced()
    async with Simulator(profile="1.0.10", pace=pace) as sim:
        sim.subscribe(produced.on_step)
        ours_cid, ref_cid, raw_cid = sim.cascade_id, await sim.start_cascade(), await sim.start_cascade()
        ours = await spawn(sys.executable, "our_worker.py", sim.port, ours_cid)
        ref = await spawn(ref_python, "ref_worker.py", sim.port, ref_cid)
        raw = await spawn(sys.executable, "our_worker.py", sim.port, raw_cid, "raw")
        await asyncio.sleep(1.0)  # the streams open
        for _ in range(turns):  # alternate: the same load for each
            for cid in (ours_cid, ref_cid, raw_cid):
                await sim.submit_user_turn(PROMPT, cascade_id=cid)
                await sim.wait_idle(timeout=60)
        await asyncio.sleep(1.0)  # the last deltas arrive
        events = {"ours": await collect(ours), "ref": await collect(ref), "raw": await collect(raw)}
    out: dict[str, Any] = {}
    for name, cid in (("ours", ours_cid), ("ref", ref_cid), ("raw", raw_cid)):
        ms, missing = per_change(produced, cid, events[name])
        out[name] = {"n": len(ms), "missing": missing, "p50": percentile(ms, 50), "p99": percentile(ms, 99)}
    return out


async def amain(args: argparse.Namespace) -> int:
    print(f"us vs the reference (omnigent 0.19.1 antigravity-native), one run ({machine()})")
    python = reference_python()
    fixtures = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))]
    steps = renumbered(fixtures, 200)
    settled = [s for s in fixtures if s.get("status") != "CORTEX_STEP_STATUS_WAITING"]
    history = renumbered(settled, 10_000 // len(settled) + 1)[:10_000]
    maps, attaches = [], []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "steps.json").write_text(json.dumps(steps))
        (Path(tmp) / "history.json").write_text(json.dumps(history))
        for _ in range(args.reps):  # interleaved: the machine is shared, a ratio is read within one rep
            ref_map = ref_run(python, "mapper", str(Path(tmp) / "steps.json"))["steps_per_s"]
            maps.append((throughput(steps), ref_map))
            ref_attach = ref_run(python, "attach", str(Path(tmp) / "history.json"))
            ours_wall, ours_cpu = await attach(history, None)
            attaches.append((ours_wall, ours_cpu, ref_attach["seconds"], ref_attach["cpu_seconds"]))
    m_ratios = [o / r for o, r in maps]
    a_ratios = [o / r for o, _, r, _ in attaches]
    ac_ratios = [o / r for _, o, _, r in attaches]
    ours_map, ref_map = statistics.median(o for o, _ in maps), statistics.median(r for _, r in maps)
    m = statistics.median(m_ratios)
    print(f"mapper: ours {ours_map:,.0f} steps/s, reference {ref_map:,.0f} steps/s (medians of {args.reps}): "
          f"{m:.2f}x, spread {spread(m_ratios)} (goal >= 1x, stretch 2x, in every run: {verdict(min(m_ratios) >= 1, f'{min(m_ratios):.2f}x')})")  # fmt: skip
    ours_wall, ours_cpu = statistics.median(a[0] for a in attaches), statistics.median(a[1] for a in attaches)
    ref_attach = {"seconds": statistics.median(a[2] for a in attaches),
                  "cpu_seconds": statistics.median(a[3] for a in attaches)}  # fmt: skip
    a, ac = statistics.median(a_ratios), statistics.median(ac_ratios)
    print(f"attach 10,000 steps (emitter vs reader._process_stream_step): ours {ours_wall:.2f} s wall ({ours_cpu:.2f} s "
          f"CPU), reference {ref_attach['seconds']:.2f} s ({ref_attach['cpu_seconds']:.2f} s CPU): wall {a:.2f}x "
          f"{spread(a_ratios)}, CPU {ac:.2f}x {spread(ac_ratios)} (goal <= 1x in every run: wall {verdict(max(a_ratios) <= 1, f'{max(a_ratios):.2f}x')}, "
          f"CPU {verdict(max(ac_ratios) <= 1, f'{max(ac_ratios):.2f}x')})")  # fmt: skip
    lat = await latency(python, args.turns, args.pace)
    o, r = lat["ours"], lat["ref"]
    p50, p99 = o["p50"] / r["p50"], o["p99"] / r["p99"]
    print(f"stream change -> event, per change: ours p50 {o['p50']:.2f} ms p99 {o['p99']:.2f} ms (n={o['n']}, "
          f"undelivered {o['missing']}); reference p50 {r['p50']:.2f} ms p99 {r['p99']:.2f} ms (n={r['n']}, "
          f"undelivered {r['missing']})")  # fmt: skip
    w = lat["raw"]
    print(f"  the bare transport (RpcClient.stream + JSON decode, no harness): p50 {w['p50']:.2f} ms p99 "
          f"{w['p99']:.2f} ms: the floor both sides pay; the harness adds {o['p50'] - w['p50']:.2f} ms at p50")  # fmt: skip
    print(f"  p50 ratio {p50:.2f}x (target <= 0.5x: {verdict(p50 <= 0.5, f'{p50:.2f}x')}), "
          f"p99 ratio {p99:.2f}x (target <= 1x: {verdict(p99 <= 1, f'{p99:.2f}x')})")  # fmt: skip
    write_summary(
        "reference",
        {
            "mapper_ours": ours_map, "mapper_ref": ref_map, "mapper_ratio": m,
            "attach_ours_s": ours_wall, "attach_ours_cpu_s": ours_cpu, "attach_ref_s": ref_attach["seconds"],
            "attach_ref_cpu_s": ref_attach["cpu_seconds"], "attach_ratio": a, "attach_cpu_ratio": ac,
            "mapper_ratios": m_ratios, "attach_ratios": a_ratios, "attach_cpu_ratios": ac_ratios,
            "latency": lat, "latency_p50_ratio": p50, "latency_p99_ratio": p99,
        },
    )  # fmt: skip
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--pace", type=float, default=0.2)
    p.add_argument("--reps", type=int, default=3, help="repetitions of the mapper and attach comparisons")
    quiet_logs()
    return asyncio.run(amain(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
