"""Stop latency through omnigent's harness runner with the agy-harness plugin: ``python benchmarks/bench_plugin_stop.py``.

For N turns against the simulator (a long streamed reply, and a turn parked on a command approval),
omnigent's ``interrupt`` event is POSTed to the runner's socket as omnigent does, and we measure:

* ``ack``: until the runner answers the interrupt (204);
* ``agy``: until the simulator (agy) reports the cascade no longer running;
* ``cancelled``: until omnigent's stream carries ``response.cancelled``.

Needs the real omnigent 0.19.1 venv (built by ``tests/real_omnigent.py``); the plugin is installed
into a fresh overlay of it from this checkout.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agy_harness.adapters.simulator import Simulator  # noqa: E402
from tests.omnigent_plugin.runner import RunnerProcess  # noqa: E402
from tests.omnigent_plugin.venv import plugin_environment  # noqa: E402

RUNS = 10


async def until(predicate, step: float = 0.002) -> None:  # type: ignore[no-untyped-def]
    while not predicate():
        await asyncio.sleep(step)


async def one(runner: RunnerProcess, sim: Simulator, prompt: str, at: str) -> tuple[float, float, float]:
    turn = await runner.message(prompt)
    await turn.wait_for(at)
    t0 = time.perf_counter()
    status = await runner.interrupt()
    ack = time.perf_counter() - t0
    assert status == 204, status
    await until(lambda: not sim.is_running())
    agy = time.perf_counter() - t0
    await turn.finished()
    cancelled = time.perf_counter() - t0
    assert turn.terminal and turn.terminal["type"] == "response.cancelled"
    return ack, agy, cancelled


def show(name: str, rows: list[tuple[float, float, float]]) -> None:
    for i, label in enumerate(("ack", "agy", "cancelled")):
        values = sorted(r[i] * 1000 for r in rows)
        print(
            f"{name:>14} {label:>9}: p50 {statistics.median(values):7.1f} ms   max {values[-1]:7.1f} ms   (n={len(values)})"
        )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        python = plugin_environment(Path(tmp))
        async with Simulator(profile="1.0.10", pace=1.0) as sim:
            env = {"HARNESS_AGY_HARNESS_PORT": str(sim.port), "HARNESS_AGY_HARNESS_CASCADE": sim.cascade_id}
            async with RunnerProcess(python, env, Path(tmp)) as runner:
                streaming = [
                    await one(
                        runner,
                        sim,
                        "Write a long story about a lighthouse keeper.",
                        "response.output_text.delta",
                    )
                    for _ in range(RUNS)
                ]
                parked = [
                    await one(runner, sim, "run: make deploy", "response.elicitation_request")
                    for _ in range(RUNS)
                ]
    show("streaming", streaming)
    show("parked gate", parked)


if __name__ == "__main__":
    asyncio.run(main())
