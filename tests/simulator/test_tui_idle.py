"""The simulated agy TUI left open renders nothing while nothing changes, and still draws the end of a
turn (a run-status change, which raises no step callback). Before, its ticker rendered the whole
conversation 20 times a second, idle or not (three deep copies of its steps each time: up to ~20 ms of
CPU a second for a TUI sitting in a tmux pane)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator import tui as tui_module
from agy_harness.adapters.simulator.tui import Tui


async def test_an_idle_tui_renders_nothing_and_a_turn_end_is_still_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    renders: list[int] = []
    render = tui_module.render_screen

    def counted(*args: Any, **kwargs: Any) -> list[str]:
        renders.append(1)
        return render(*args, **kwargs)

    monkeypatch.setattr(tui_module, "render_screen", counted)
    out = os.open(os.devnull, os.O_WRONLY)
    try:
        async with Simulator(pace=0) as sim:
            tui = Tui(sim, "1.0.10", out_fd=out)
            ticker = asyncio.create_task(tui._tick())
            try:
                for _ in range(100):  # the first tick draws the screen once
                    if renders:
                        break
                    await asyncio.sleep(0.05)
                assert tui._last_drawn[-1] == "agy 1.0.10 · idle", tui._last_drawn
                renders.clear()
                await asyncio.sleep(0.6)  # a dozen ticks, nothing changing
                assert renders == []  # (before: one render a tick)
                unsubscribe = sim.subscribe(tui.on_step)  # (as Tui.run does)
                await sim.submit_user_turn("hello")
                await sim.wait_idle(timeout=30)
                unsubscribe()
                for _ in range(100):  # the turn's end (no step callback says it) drawn by the ticker
                    if tui._last_drawn[-1] == "agy 1.0.10 · idle" and any(
                        "hello" in x for x in tui._last_drawn
                    ):
                        break
                    await asyncio.sleep(0.05)
                assert any("hello" in line for line in tui._last_drawn), tui._last_drawn
                assert tui._last_drawn[-1] == "agy 1.0.10 · idle", tui._last_drawn
            finally:
                ticker.cancel()
                await asyncio.gather(ticker, return_exceptions=True)
    finally:
        os.close(out)
