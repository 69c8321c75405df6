"""Finding 12: a stream is not declared silent while agy legitimately waits on a human."""

from __future__ import annotations

import asyncio
import os

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Event, GateOpened
from tests.integration.helpers import FAST


async def test_a_gate_waiting_for_hours_does_not_cycle_the_stream(sim: Simulator) -> None:
    async with open_session(
        pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, stream_idle_timeout=0.2
    ) as s:
        await s.send("run: git status")
        events: list[Event] = []
        async for event in s.events():
            events.append(event)
            if isinstance(event, GateOpened):
                break
        stats = s.harness.stats
        errors_before = stats.source_errors
        await asyncio.sleep(2.0)  # ten idle timeouts with the human thinking
        assert stats.source_errors == errors_before  # it was re-opened every 0.2 s, falling back to polling
        assert stats.current_source == "stream"
        await s.answer(event.gate_id, True)
        async for event in s.events():
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
