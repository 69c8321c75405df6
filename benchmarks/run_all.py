"""Every benchmark, one after the other, then a summary table and the targets: ``python benchmarks/run_all.py``.

    python benchmarks/run_all.py [--readme] [--only SCRIPT ...]

Each script runs in its own process (so CPU figures do not mix) with a time cap, prints its own
figures, and leaves its key numbers in a temporary JSON file that the summary is built from. The
last section prints every target (``goals.py``) with its measured value, its ratio's median and
spread over the repetitions, and its verdict. A whole run is kept in ``last_run.json``; ``--readme``
also writes its table into docs/benchmarks.md (``tests/test_benchmark_table.py`` checks the two agree).
Exits 0 when every script ran (a missed target is a finding, printed as such, not a crash).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import goals  # noqa: E402
from common import SUMMARY_ENV, machine  # noqa: E402

LAST_RUN = HERE / "last_run.json"  # the last whole run's targets (the README's table is made of it)

# (script, arguments, cap in seconds)
BENCHMARKS: list[tuple[str, list[str], int]] = [
    ("bench_mapper.py", [], 120),
    ("bench_latency.py", [], 120),
    ("bench_idle.py", [], 180),
    ("bench_idle_big.py", [], 180),
    ("bench_cursor.py", [], 180),
    ("bench_volume.py", [], 180),
    ("probe_transports.py", ["--streams", "1", "300", "--calls", "100", "--rounds", "5"], 300),
    ("bench_reference.py", [], 420),
    ("bench_attach.py", [], 420),
    ("bench_active.py", [], 420),
    ("bench_board.py", [], 300),
    ("bench_bounded.py", [], 300),
    ("bench_ledger.py", [], 420),
    ("bench_policy.py", [], 120),
]


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
        if "ratio_poll_stream" in idle:
            rows.append(("idle CPU ratio poll/stream", f"{idle['ratio_poll_stream']:.1f}x"))
    big = data.get("idle_big")
    if big:
        rows.append(
            (
                f"idle poll, {big['mb']} MB of steps: whole read vs stepOffset",
                f"{big['whole_ms_per_poll']:.1f} ms vs {big['offset_ms_per_poll']:.2f} ms CPU/poll",
            )
        )
    board = data.get("board")
    if board:
        i, g = board["idle"], board["gates"]
        rows.append((f"board: {i['sessions']} idle conversations", f"{i['cpu_pct']:.2f} % of a core"))
        for mode in ("cold", "warm"):
            f = g[mode]
            rows.append((f"board: gate asked -> card on screen, {mode} (n={f['n']})",
                         f"p50 {f['p50_ms']:.0f} ms, p95 {f['p95_ms']:.0f} ms ({g['measured_to']})"))  # fmt: skip
    ledger = data.get("ledger")
    if ledger:
        rows.append(
            (
                f"answer latency with the decision ledger / without (p50, n={ledger['gates']})",
                f"{ledger['with_p50_ms']:.1f} ms / {ledger['without_p50_ms']:.1f} ms, per round "
                + ", ".join(f"{r:.2f}x" for r in ledger["ratio_p50_per_round"]),
            )
        )
        rows.append(("decision ledger records per second (each fsync'd)", f"{ledger['records_per_s']:,.0f}"))
    costs = data.get("call_costs")
    if costs:
        rows.append(("CPU per unary call", ", ".join(f"{k} {v:.2f} ms" for k, v in costs.items())))
    pol = data.get("policy")
    if pol:
        rows.append((f"rules: one decision, {pol['rules']:,} rules",
                     f"CPU p50 {pol['decide_p50_ms']:.3f} ms, p99 {pol['decide_p99_ms']:.3f} ms"))  # fmt: skip
        rows.append(("rules: load 200 rules with their examples", f"{pol['load_200_ms']:.0f} ms"))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--readme", action="store_true", help="write the targets table into docs/benchmarks.md")
    p.add_argument("--only", nargs="*", help="run only these scripts (the table then lacks the others)")
    args = p.parse_args()
    failed: list[str] = []
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "summary.json"
        env = {**os.environ, SUMMARY_ENV: str(summary)}
        for name, script_args, cap in BENCHMARKS:
            if args.only and name not in args.only:
                continue
            print(f"== {name} {' '.join(script_args)}", flush=True)
            start = time.perf_counter()
            try:
                # the harness logs each fallback it recovers from; the figures are what matters here
                run = subprocess.run(
                    [sys.executable, str(HERE / name), *script_args],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    timeout=cap,
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
    run = {"when": when, "machine": machine(), "rows": goals.rows(data), "figures": data}
    print("\n== targets (a ratio: its median and spread; met = in every run)")
    for target, measured, verdict in run["rows"]:
        print(f"- {target}: {measured}: {verdict}")
    if not args.only:  # the README's table is one whole run's
        LAST_RUN.write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n")
        print(f"(kept in {LAST_RUN.relative_to(HERE.parent)})")
        if args.readme:
            write_readme(run)
            print("docs/benchmarks.md's benchmark table written from this run")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


def write_readme(run: dict[str, Any]) -> None:
    """Replace the docs' table (docs/benchmarks.md, between goals.BEGIN and goals.END) by this run's."""
    readme = HERE.parent / "docs" / "benchmarks.md"
    text = readme.read_text()
    start, end = text.index(goals.BEGIN), text.index(goals.END) + len(goals.END)
    readme.write_text(text[:start] + goals.table(run) + text[end:])


if __name__ == "__main__":
    sys.exit(main())
