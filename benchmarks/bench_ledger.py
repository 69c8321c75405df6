"""The decision ledger's cost: answer latency with the ledger vs without, and records per second.

    python benchmarks/bench_ledger.py [--gates 10] [--rounds 6] [--records 2000]

Answer latency: ``Session.answer`` on a gate, until agy (the simulator, in this process, TLS HTTP/2 on
loopback, pace 0) took it -- with the file ledger (the decision record written before the answer is
sent, its fsync right after, the follow-ups in the background) and with ``ledger=None``; ``--rounds``
alternating rounds of ``--gates`` gates each, on the same simulator. The goal: with / without ≤ 1.1×
(p50). Records per second: ``--records`` records appended one after another (each fsync'd and
checkpointed: what one writer sustains), on a temporary directory of this machine's disk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import machine, percentile, quiet_logs, ratio, write_summary

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.composition.root.session import open_session
from agy_harness.composition.service.harness import HarnessOptions
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import LedgerEntry

FAST = HarnessOptions(fallback_backoff=0.05, max_backoff=0.4, sink_retry=0.01, directory_interval=0.1)


async def answer_latencies(sim: Simulator, gates: int, ledger: FileLedger | None) -> list[float]:
    """ms from ``answer`` called to agy having taken it, for ``gates`` gates."""
    out: list[float] = []
    async with open_session(
        pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, poll_interval=0.05, ledger=ledger
    ) as s:
        events = s.events()
        for _ in range(gates):
            await s.send("run: git status")
            answered = False  # (the history replayed at the start holds idle statuses of its own)
            async for event in events:
                if isinstance(event, GateOpened):
                    start = time.perf_counter()
                    await s.answer(event.gate_id, True)
                    out.append((time.perf_counter() - start) * 1000)
                    answered = True
                if answered and event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                    break
    return out


def records_per_second(directory: Path, n: int) -> float:
    ledger = FileLedger(directory)
    body = {"gate_id": "g", "shown": "run_command: git status", "verdict": "allow", "decided_by": {"kind": "human"}}
    ledger.record_now(LedgerEntry(type="decision", body=body))  # keys made, files opened
    start = time.perf_counter()
    for i in range(n):
        ledger.record_now(LedgerEntry(type="decision", body={**body, "gate_id": f"g{i}"}))
    elapsed = time.perf_counter() - start
    ledger.close()
    return n / elapsed


async def run(gates: int, rounds: int, records: int) -> dict[str, object]:
    with_ledger: list[list[float]] = []
    without: list[list[float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with Simulator(profile="1.0.10", gate_timeout=None, pace=0.0) as sim:
            await answer_latencies(sim, 3, None)  # warm up
            for r in range(rounds):
                ledger = FileLedger(Path(tmp) / f"ledger-{r}")
                with_ledger.append(await answer_latencies(sim, gates, ledger))
                without.append(await answer_latencies(sim, gates, None))
                ledger.close()
        rps = records_per_second(Path(tmp) / "throughput", records)
    p50s = [ratio(statistics.median(a), statistics.median(b)) for a, b in zip(with_ledger, without, strict=True)]
    flat_with = [x for r in with_ledger for x in r]
    flat_without = [x for r in without for x in r]
    return {
        "gates": len(flat_with),
        "with_p50_ms": percentile(flat_with, 50),
        "with_p95_ms": percentile(flat_with, 95),
        "without_p50_ms": percentile(flat_without, 50),
        "without_p95_ms": percentile(flat_without, 95),
        "ratio_p50_per_round": p50s,
        "records_per_s": rps,
        "machine": machine(),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gates", type=int, default=10)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--records", type=int, default=2000)
    args = p.parse_args()
    quiet_logs()
    figures = asyncio.run(run(args.gates, args.rounds, args.records))
    print(f"answer latency with the ledger:    p50 {figures['with_p50_ms']:.2f} ms, p95 {figures['with_p95_ms']:.2f} ms")
    print(f"answer latency without a ledger:   p50 {figures['without_p50_ms']:.2f} ms, p95 {figures['without_p95_ms']:.2f} ms")
    ratios = ", ".join(f"{r:.2f}x" for r in figures["ratio_p50_per_round"])  # type: ignore[attr-defined]
    print(f"with / without, p50 per round:     {ratios} (goal <= 1.1x)")
    print(f"records per second (fsync'd each): {figures['records_per_s']:,.0f}")
    print(f"({figures['gates']} gates each way; {figures['machine']})")
    write_summary("ledger", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
