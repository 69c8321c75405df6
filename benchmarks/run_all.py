"""Every benchmark, one after the other, then a summary table: ``python benchmarks/run_all.py``.

Each script runs in its own process (so CPU figures do not mix) with a 120 s cap, prints its own
figures, and leaves its key numbers in a temporary JSON file that the summary is built from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import SUMMARY_ENV, machine  # noqa: E402

BENCHMARKS = ["bench_mapper.py", "bench_latency.py", "bench_idle.py"]


def table(data: dict[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    m = data.get("mapper")
    if m:
        rows.append(("mapper throughput (recorded steps)", f"{m['steps_per_s']:,.0f} steps/s"))
        rows.append(
            (
                "streamed reply 10 KB vs 1 MB (200 frames)",
                f"{m['stream_10k_ms']:.2f} ms vs {m['stream_1m_ms']:.2f} ms ({m['ratio']:.1f}x for 100x)",
            )
        )
    lat = data.get("latency")
    if lat:
        for src in ("stream", "poll"):
            f = lat[src]
            rows.append(
                (
                    f"frame→event, {src} (per change, n={f['changes']})",
                    f"p50 {f['change_p50']:.2f} ms, p99 {f['change_p99']:.2f} ms, max {f['change_max']:.2f} ms",
                )
            )
        rows.append(
            (
                "frame→event ratio poll/stream",
                f"p50 {lat['ratio_change_p50']:.0f}x, p99 {lat['ratio_change_p99']:.0f}x",
            )
        )
    idle = data.get("idle")
    if idle:
        for mode in ("stream", "poll", "shared"):
            f = idle.get(mode)
            if f and mode == "shared":
                rows.append(
                    (
                        f"{f['sessions']} stream sessions on ONE client",
                        f"{f['calls_per_s']:.0f} calls/s, {f['calls_stuck']} calls stuck, "
                        f"{f['silent_sessions']} sessions got no replay",
                    )
                )
            elif f:
                rows.append(
                    (
                        f"{f['sessions']} idle sessions, {mode}",
                        f"{f['cpu_pct']:.1f} % of a core ({f['cpu_pct_per_session']:.3f} % each), "
                        f"{f['calls_per_s']:.0f} calls/s",
                    )
                )
        rows.append(("idle CPU ratio poll/stream", f"{idle['ratio_poll_stream']:.1f}x"))
    costs = data.get("call_costs")
    if costs:
        rows.append(("CPU per unary call", ", ".join(f"{k} {v:.2f} ms" for k, v in costs.items())))
    return rows


def main() -> int:
    failed: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "summary.json"
        env = {**os.environ, SUMMARY_ENV: str(summary)}
        for name in BENCHMARKS:
            print(f"== {name}", flush=True)
            start = time.perf_counter()
            try:
                # the harness logs each fallback it recovers from; the figures are what matters here
                run = subprocess.run(
                    [sys.executable, str(HERE / name)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    timeout=120,
                    env=env,
                )
            except subprocess.TimeoutExpired:
                print(f"   {name} timed out")
                failed.append(name)
                continue
            print(run.stdout, end="", flush=True)
            print(f"   ({name}: {time.perf_counter() - start:.1f} s, exit {run.returncode})", flush=True)
            if run.returncode != 0:
                failed.append(name)
        data = json.loads(summary.read_text()) if summary.exists() else {}
    print(f"\n== summary ({machine()})")
    rows = table(data)
    width = max((len(k) for k, _ in rows), default=0)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
