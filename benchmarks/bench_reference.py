"""Us beside the reference (omnigent 0.19.1's antigravity-native harness) on the same inputs, one run.

    python benchmarks/bench_reference.py [--turns 4] [--pace 0.2] [--reps 3]

The reference runs in its own Python 3.12 venv (``tests/real_omnigent.py`` builds it once under
``~/.cache/agy-harness/``: ``omnigent==0.19.1`` from the registry), through ``ref_worker.py``:

* mapper: its ``steps.map_step_to_events`` vs our ``Reconciler.feed`` (parse, map, dedup, live state;
  a reconciler of the fixtures' own cascade) on the recorded fixtures renumbered x200 (none dedups),
  both read from one JSON file; the best of 7 passes each, the two sides' passes interleaved. Target: ours >= 1x (stretch 2x). Beside it, the same steps through the reference's whole
  per-step work (``_process_stream_step``: dedup, status edges, usage, gates), which is what
  ``Reconciler.feed`` does besides the mapping: no target, the comparison of equal work.
* (attach end to end is ``bench_attach.py``'s.)
* stream latency: one simulator (this process, pace ``--pace``) streams ``--turns`` long replies to
  each side; each side follows its own conversation from its own process (ours: ``our_worker.py``,
  ``open_session``; the reference: ``ref_worker.py``, its ``_stream_loop`` over httpx HTTP/1.1).
  Per change: from the simulator growing a reply's text (``sim.subscribe`` hook) to the first text
  delta that carries it reaching the consumer, both stamped with ``time.perf_counter()``
  (CLOCK_MONOTONIC, one clock for all processes). Targets: our p50 <= 0.5x its p50, p99 <= its p99.

Each comparison runs ``--reps`` times (3), the two sides interleaved; each ratio is printed with its
spread, and a target is met only when it holds in every run.
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

from bench_mapper import FIXTURES, cascade_of, one_pass, renumbered, throughput
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


def mapper_rates(
    python: str, path: Path, steps: list[dict[str, Any]], passes: int = 7
) -> tuple[float, float]:
    """Steps/s of ours and of the reference's mapper, each its best of ``passes`` passes, the passes
    interleaved one for one (the reference's in its own process, loaded once): both sides sample the
    same moments of a shared machine."""
    cascade = cascade_of(steps)
    with subprocess.Popen(
        [python, str(HERE / "ref_worker.py"), "mapper-passes", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as ref:  # fmt: skip
        assert ref.stdin is not None and ref.stdout is not None
        json.loads(ref.stdout.readline())  # {"loaded"}
        ours, theirs = [], []
        for _ in range(passes):
            ours.append(one_pass(steps, cascade))
            ref.stdin.write("pass\n")
            ref.stdin.flush()
            theirs.append(json.loads(ref.stdout.readline())["seconds"])
        ref.stdin.close()
    return len(steps) / min(ours), len(steps) / min(theirs)


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
    print(f"us vs the reference (omnigent 0.19.1 antigravity-native), {args.reps} runs ({machine()})")
    python = reference_python()
    fixtures = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))]
    maps, works = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "steps.json"
        path.write_text(json.dumps(renumbered(fixtures, 200)))
        steps = json.loads(path.read_text())  # both sides read the same file: dicts as a decoder makes them
        for _ in range(args.reps):  # interleaved: the machine is shared, a ratio is read within one rep
            maps.append(mapper_rates(python, path, steps))
            ref_work = ref_run(python, "process", str(path))["steps_per_s"]
            works.append((throughput(steps), ref_work))
    m_ratios = [o / r for o, r in maps]
    ours_map, ref_map = statistics.median(o for o, _ in maps), statistics.median(r for _, r in maps)
    m = statistics.median(m_ratios)
    print(f"mapper: ours {ours_map:,.0f} steps/s, reference {ref_map:,.0f} steps/s (medians of {args.reps}): "
          f"{m:.2f}x, spread {spread(m_ratios)} (goal >= 1x, stretch 2x, in every run: {verdict(min(m_ratios) >= 1, f'{min(m_ratios):.2f}x')})")  # fmt: skip
    w_ratios = [o / r for o, r in works]
    ours_work, ref_work = statistics.median(o for o, _ in works), statistics.median(r for _, r in works)
    print(f"per step, the same work (its reader's _process_stream_step: dedup, status edges, usage, gates): "
          f"ours {ours_work:,.0f} steps/s, reference {ref_work:,.0f} steps/s: {statistics.median(w_ratios):.2f}x, "
          f"spread {spread(w_ratios)}")  # fmt: skip
    runs = [await latency(python, args.turns, args.pace) for _ in range(args.reps)]
    p50s = [r["ours"]["p50"] / r["ref"]["p50"] for r in runs]
    p99s = [r["ours"]["p99"] / r["ref"]["p99"] for r in runs]
    lat = {
        side: {k: statistics.median(r[side][k] for r in runs) for k in ("p50", "p99", "n", "missing")}
        for side in ("ours", "ref", "raw")
    }
    o, r, w = lat["ours"], lat["ref"], lat["raw"]
    print(f"stream change -> event, per change (medians of {args.reps} runs): ours p50 {o['p50']:.2f} ms p99 "
          f"{o['p99']:.2f} ms (n={o['n']:.0f}, undelivered {o['missing']:.0f}); reference p50 {r['p50']:.2f} ms "
          f"p99 {r['p99']:.2f} ms (n={r['n']:.0f}, undelivered {r['missing']:.0f})")  # fmt: skip
    print(f"  the bare transport (RpcClient.stream + JSON decode, no harness): p50 {w['p50']:.2f} ms p99 "
          f"{w['p99']:.2f} ms: the floor both sides pay; the harness adds {o['p50'] - w['p50']:.2f} ms at p50")  # fmt: skip
    print(f"  p50 ratio {statistics.median(p50s):.2f}x {spread(p50s)} (target <= 0.5x in every run: "
          f"{verdict(max(p50s) <= 0.5, f'{max(p50s):.2f}x')}), p99 ratio {statistics.median(p99s):.2f}x "
          f"{spread(p99s)} (target <= 1x in every run: {verdict(max(p99s) <= 1, f'{max(p99s):.2f}x')})")  # fmt: skip
    write_summary(
        "reference",
        {
            "mapper_ours": ours_map, "mapper_ref": ref_map, "mapper_ratio": m, "mapper_ratios": m_ratios,
            "work_ours": ours_work, "work_ref": ref_work, "work_ratios": w_ratios,
            "latency": lat, "latency_p50_ratios": p50s, "latency_p99_ratios": p99s,
        },
    )  # fmt: skip
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--pace", type=float, default=0.2)
    p.add_argument("--reps", type=int, default=3, help="repetitions of each comparison")
    quiet_logs()
    return asyncio.run(amain(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
