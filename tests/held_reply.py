"""agy that works on after its final reply (a first turn's checkpoint, held until the test says so):
the simulator's ``Engine.final`` patched for the turn-end tests of every surface."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.adapters.simulator.engine import Engine, Plan


def hold_after_reply(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event]:
    """``(replied, release)``: set once agy's final reply is out; agy's run goes on until ``release``."""
    replied, release = asyncio.Event(), asyncio.Event()
    final = Engine.final

    async def reply_then_work_on(self: Engine, plan: Plan) -> None:
        await final(self, plan)
        replied.set()
        await release.wait()  # agy's work after its reply (its checkpoint follows)

    monkeypatch.setattr(Engine, "final", reply_then_work_on)
    return replied, release
