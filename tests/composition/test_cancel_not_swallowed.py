"""A cancel is never swallowed by a wait with a deadline (Python 3.11's ``asyncio.wait_for`` does that
when the cancel and the awaited thing's completion land in the same loop pass)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from agy_harness.composition.entrypoints.demo import TapSink
from tests.fakes import RecordingSink


async def test_the_demo_stops_when_cancelled_as_a_gate_answer_wakes_it() -> None:
    # SIGTERM cancels every task at once; the gate's cancelled ask touches the tap in that same pass.
    tap = TapSink(RecordingSink(accept_at_most=0))
    waiting = asyncio.ensure_future(tap.wait_for(lambda e: False, 0, timeout=60))
    await asyncio.sleep(0)  # now inside its wait for agy
    tap._touch()
    waiting.cancel()
    done, _ = await asyncio.wait({waiting}, timeout=30)
    assert waiting in done and waiting.cancelled()  # not still waiting out agy's 60 s of silence


def test_wait_for_is_banned_in_the_package() -> None:
    probe = "import asyncio\nasync def f(e):\n    await asyncio.wait_for(e.wait(), 1)\n"
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--stdin-filename", "composition/probe.py", "-"],
        input=probe,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],  # the project's ruff settings
    )
    assert out.returncode == 1 and "TID251" in out.stdout, out.stdout + out.stderr
