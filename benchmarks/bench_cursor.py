"""Cursor store cost: attach to a long conversation and stream a long reply, with and without the store.

    python benchmarks/bench_cursor.py [--steps 10000]

No network: the emitter (``composition/service/emitter.py``, what the harness delivers through) is fed the
recorded fixtures (the settled ones: a history has no open gate) renumbered into one ``--steps``-step snapshot batch (an attach to a conversation
that long), with a sink that accepts everything. Three stores:

* none;
* ``FileCursorStore`` as the harness uses it now: the journal (one appended line per delivery, one
  fsync per batch, compaction);
* the whole-cursor save it replaced (the same store behind the plain ``CursorStore`` port: a full
  snapshot with two fsyncs after every delivery), on ``--old-steps`` steps only, since it is O(N²),
  fed a batch per step (as a live stream delivers them), beside the journal and no store fed the
  same way (there each committed step's record is fsynced before the next batch: the durability rule).

Then a 1 MB reply streamed as 200 cumulative frames (one batch each), with and without the journal.
Target: attach with the file store within 1.2x of without, in CPU time, in each of the (3) interleaved
runs. Each timed attach starts after a ``gc.collect()``: otherwise a full collection owed by the run
before lands in one attach or the other (the per-run ratio swung 1.06-2.30x on one tree).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_mapper import FIXTURES, renumbered
from common import TimedSink, quiet_logs, write_summary

from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.composition.service.conversation import Conversation
from agy_harness.composition.service.emitter import Emitter
from agy_harness.ports.protocols import Cursor, StepBatch

CASCADE = "bench"


class WholeCursorStore:
    """The old cost model: the plain CursorStore port, a full atomic snapshot per delivery."""

    def __init__(self, directory: Path) -> None:
        self._inner = FileCursorStore(directory)

    def load(self, cascade_id: str) -> Cursor | None:
        return self._inner.load(cascade_id)

    def save(self, cursor: Cursor) -> None:
        self._inner.save(cursor)


class NoSnapshot:
    async def read_steps(self, cascade_id: str) -> list[dict[str, Any]]:
        return []


def emitter(store: Any) -> Emitter:
    return Emitter(Conversation(CASCADE, store), snapshot=NoSnapshot(), sink=TimedSink(), cursor_store=store)


async def attach(steps: list[dict[str, Any]], store: Any, *, per_step: bool = False) -> tuple[float, float]:
    """One snapshot batch (an attach), or one batch per step (``per_step``: a live stream, a frame a step)."""
    em = emitter(store)
    if per_step:
        batches = [StepBatch(cascade_id=CASCADE, steps=(s,), snapshot=False, source="bench") for s in steps]
    else:
        batches = [StepBatch(cascade_id=CASCADE, steps=tuple(steps), snapshot=True, source="bench")]
    gc.collect()  # each attach starts from the same heap: no full collection owed by the one before
    w, c = time.perf_counter(), time.process_time()
    for batch in batches:
        await em.apply(batch)
    return time.perf_counter() - w, time.process_time() - c


async def stream(size: int, frames: int, store: Any) -> float:
    done = json.loads((FIXTURES / "stream_planner_text_done.json").read_text())
    text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    em = emitter(store)
    t = time.perf_counter()
    for k in range(1, frames + 1):
        s = json.loads(json.dumps(done))
        s["plannerResponse"]["modifiedResponse"] = text[: size * k // frames]
        if k < frames:
            s["status"] = "CORTEX_STEP_STATUS_GENERATING"
        await em.apply(StepBatch(cascade_id=CASCADE, steps=(s,), snapshot=False, source="bench"))
    return time.perf_counter() - t


async def amain(args: argparse.Namespace) -> int:
    fixtures = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))]
    base = [s for s in fixtures if s.get("status") != "CORTEX_STEP_STATUS_WAITING"]  # a history is settled
    steps = renumbered(base, args.steps // len(base) + 1)[: args.steps]
    tmp = Path(tempfile.mkdtemp(prefix="agy-bench-cursor-"))
    try:
        runs = []
        for i in range(args.runs):  # best of the runs each, interleaved: the machine is shared
            store = FileCursorStore(tmp / f"journal{i}")
            runs.append((await attach(steps, None), await attach(steps, store)))
        none_wall, none_cpu = min(r[0] for r in runs)
        j_wall, j_cpu = min(r[1] for r in runs)
        old_steps = steps[: args.old_steps]  # a batch per step, as the live stream delivers them
        o_none, _ = await attach(old_steps, None, per_step=True)
        o_wall, o_cpu = await attach(old_steps, WholeCursorStore(tmp / "whole"), per_step=True)
        oj_wall, _ = await attach(old_steps, FileCursorStore(tmp / "perstep"), per_step=True)
        s_none = await stream(1_000_000, 200, None)
        s_journal = await stream(1_000_000, 200, FileCursorStore(tmp / "stream"))
        journal_bytes = sum(p.stat().st_size for p in (tmp / "journal0").iterdir())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    r = j_wall / none_wall
    rc = j_cpu / none_cpu
    ratios = [j[0] / n[0] for n, j in runs]  # within each repetition
    cpu_ratios = [j[1] / n[1] for n, j in runs]
    print(f"attach {len(steps)} steps: no store {none_wall:.2f} s wall ({none_cpu:.2f} s CPU); "
          f"journal {j_wall:.2f} s ({j_cpu:.2f} s CPU), {store.compactions} compactions, "
          f"{journal_bytes / 1e3:.0f} KB on disk")  # fmt: skip
    print(
        f"  ratio journal / none: wall {r:.2f}x, CPU {rc:.2f}x (best of {len(runs)} each); per run: wall "
        f"{min(ratios):.2f}-{max(ratios):.2f}x, CPU {min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}x "
        f"(target <= 1.2x CPU in every run: {'met' if max(cpu_ratios) <= 1.2 else 'MISSED'})"
    )
    print(f"{len(old_steps)} steps, a batch each (a live stream): no store {o_none:.2f} s; journal {oj_wall:.2f} s "
          f"({oj_wall / o_none:.1f}x); the old whole-cursor save {o_wall:.2f} s wall ({o_cpu:.2f} s CPU, "
          f"{o_wall / o_none:.1f}x; {o_wall / len(old_steps) * 1e3:.2f} ms a step, growing with the conversation)")  # fmt: skip
    print(f"1 MB reply in 200 frames: no store {s_none * 1e3:.0f} ms, journal {s_journal * 1e3:.0f} ms "
          f"({s_journal / s_none:.2f}x)")  # fmt: skip
    write_summary(
        "cursor",
        {
            "steps": len(steps),
            "attach_none_s": none_wall,
            "attach_journal_s": j_wall,
            "attach_none_cpu_s": none_cpu,
            "attach_journal_cpu_s": j_cpu,
            "attach_ratio": r,
            "attach_cpu_ratio": rc,
            "attach_ratios": ratios,
            "attach_cpu_ratios": cpu_ratios,
            "old_steps": len(old_steps),
            "attach_old_s": o_wall,
            "attach_old_none_s": o_none,
            "per_step_journal_s": oj_wall,
            "stream_none_ms": s_none * 1e3,
            "stream_journal_ms": s_journal * 1e3,
        },
    )
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--old-steps", type=int, default=1_000)
    p.add_argument("--runs", type=int, default=3, help="interleaved repetitions of the attach (default 3)")
    quiet_logs()
    return asyncio.run(amain(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
