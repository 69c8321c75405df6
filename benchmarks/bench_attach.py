"""Attach end to end, beside the reference: a simulator serving a 10,000-step conversation, each side
attaching from its own process until it has caught up, then the CPU each pays per appended step.

    python benchmarks/bench_attach.py [--steps 10000] [--appended 300] [--reps 3]

* ours: ``our_worker.py attach`` -- ``open_session`` (the public API, default adapters: discovery
  skipped, the version gate, the harness's reads) on the simulator's port;
* the reference: ``ref_worker.py attach-stream`` -- its reader's ``_stream_loop`` (httpx over TLS,
  its frame decode, ``_process_stream_step``), as it follows a conversation.

The conversation is the recorded fixtures' settled steps renumbered into one trajectory, ending in a
reply. Each worker starts its clocks after its imports and stops them when the last step's event
reaches its consumer (ours: the sink; the reference: its event recorder): *attach wall* and *attach
CPU* (the worker's own process time). Then the simulator appends ``--appended`` settled steps, one
every 5 ms, and each worker reports the CPU it spent from the first append to the last step's
event, per appended step (*steady CPU per appended step*). Each repetition runs both sides in turn
on a fresh simulator; a ratio is read within one repetition (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_mapper import FIXTURES, renumbered
from common import machine, quiet_logs, write_summary

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.recording import load_recording

HERE = Path(__file__).resolve().parent
CASCADE = "0b0e5a11-a77a-4c4e-9000-00000000a77a"
TRAJECTORY = "7a1e0000-a77a-4c4e-9000-00000000a77a"
PACE = 0.005  # seconds between two appended steps


def conversation(steps: int, appended: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``steps`` settled steps in one trajectory ending in a reply, and ``appended`` more after them."""
    fixtures = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))]
    settled = [s for s in fixtures if s.get("status") != "CORTEX_STEP_STATUS_WAITING"]
    reply = json.loads((FIXTURES / "planner_response_text.json").read_text())
    total = steps + appended
    history = renumbered(settled, total // len(settled) + 1)[: total - 2]
    history.insert(steps - 1, reply)
    history.append(copy.deepcopy(reply))
    for index, step in enumerate(history):
        step = history[index] = copy.deepcopy(step)
        info = step["metadata"]["sourceTrajectoryStepInfo"]
        info.update(trajectoryId=TRAJECTORY, cascadeId=CASCADE, stepIndex=index)
        step["metadata"]["executionId"] = f"exec-{index}"
    return history[:steps], history[steps:]


async def spawn(python: str, script: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        python, str(HERE / script), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None if __import__("os").environ.get("BENCH_STDERR") else asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def line(proc: asyncio.subprocess.Process, timeout: float = 120) -> dict[str, Any]:
    assert proc.stdout is not None
    raw = await asyncio.wait_for(proc.stdout.readline(), timeout)
    if not raw:
        raise RuntimeError("a worker exited early")
    return dict(json.loads(raw))


async def one(python: str, script: str, mode: str, history: list[Any], more: list[Any]) -> dict[str, float]:
    """One side's attach and steady figures, on a fresh simulator serving ``history``."""
    with tempfile.TemporaryDirectory() as tmp:
        recording = Path(tmp) / "conversation.jsonl"
        recording.write_text(json.dumps({"steps": history}) + "\n")
        async with Simulator(profile="1.0.10", pace=0) as sim:
            cascade = load_recording(sim, recording)
            c = sim._cascade(cascade)
            last = len(history) + len(more) - 1
            proc = await spawn(python, script, mode, str(sim.port), cascade, str(len(history) - 1), str(last))
            try:
                attached = await line(proc)
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
                await proc.stdin.drain()
                await line(proc)  # its steady clocks started

                async def turn() -> None:  # agy at work: it lists the conversation running meanwhile
                    for step in more:
                        sim._append(c, step)
                        await asyncio.sleep(PACE)

                c.worker = asyncio.create_task(turn())
                sim._status_changed(c)
                await c.worker
                steady = await line(proc)
                c.worker = None
                sim._status_changed(c)
            finally:
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()
    return {
        "wall": attached["wall"],
        "cpu": attached["cpu"],
        "steady_cpu_ms": steady["cpu"] / len(more) * 1e3,
    }


async def compare(ref_python: str, steps: int, appended: int, reps: int) -> dict[str, Any]:
    history, more = conversation(steps, appended)
    runs: list[dict[str, dict[str, float]]] = []
    for _ in range(reps):  # interleaved: a ratio is read within one repetition
        ours = await one(sys.executable, "our_worker.py", "attach", history, more)
        ref = await one(ref_python, "ref_worker.py", "attach-stream", history, more)
        runs.append({"ours": ours, "ref": ref})
    out: dict[str, Any] = {"steps": steps, "appended": appended, "runs": runs}
    for key in ("wall", "cpu", "steady_cpu_ms"):
        ratios = [r["ours"][key] / r["ref"][key] for r in runs]
        out[key] = {
            "ours": statistics.median(r["ours"][key] for r in runs),
            "ref": statistics.median(r["ref"][key] for r in runs),
            "ratio": statistics.median(ratios),
            "ratios": ratios,
        }
    return out


def report(fig: dict[str, Any]) -> None:
    names = {
        "wall": "attach wall (s)",
        "cpu": "attach CPU (s)",
        "steady_cpu_ms": "steady CPU per appended step (ms)",
    }
    print(
        f"attach end to end, {fig['steps']:,} steps, then {fig['appended']} appended ({len(fig['runs'])} runs):"
    )
    for key, name in names.items():
        f = fig[key]
        r = f["ratios"]
        print(f"  {name}: ours {f['ours']:.3f}, reference {f['ref']:.3f}: {f['ratio']:.2f}x "
              f"({min(r):.2f}-{max(r):.2f}; goal <= 1x in every run: {'met' if max(r) <= 1 else 'MISSED'})")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--appended", type=int, default=300)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    quiet_logs()
    from bench_reference import reference_python

    print(f"attach end to end, us vs the reference ({machine()})")
    fig = asyncio.run(compare(reference_python(), args.steps, args.appended, args.reps))
    report(fig)
    write_summary("attach", fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
