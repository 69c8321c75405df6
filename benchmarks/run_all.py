"""Every benchmark, one after the other: ``python benchmarks/run_all.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = ["bench_mapper.py", "bench_latency.py", "bench_idle.py"]


def main() -> int:
    failed = 0
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        # the harness logs every source failure it recovers from; the figures are what matters here
        run = subprocess.run(
            [sys.executable, str(HERE / name)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=300,
        )
        print(run.stdout, end="", flush=True)
        failed += run.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
