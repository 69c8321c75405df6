"""Declining a question through the public API sends agy's skip signal (empty ``responses``, as the
reference harness delivers it) and the turn goes on to its end: it used to hang on a 500."""

from __future__ import annotations

import asyncio
import os

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Event, GateOpened

from .helpers import FAST


@pytest.mark.parametrize("verdict", ["decline", "cancel"])
async def test_declining_a_question_skips_it_and_the_turn_ends(sim: Simulator, verdict: str) -> None:
    events: list[Event] = []
    async with (
        asyncio.timeout(30),
        open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s,
    ):
        await s.send("ask: which part should we work on first?")
        async for event in s.events():
            events.append(event)
            if isinstance(event, GateOpened):
                await s.answer(event.gate_id, verdict)
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    [question] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION"]
    assert question["status"] == "CORTEX_STEP_STATUS_DONE"
    assert question["completedInteractions"][0]["response"]["askQuestion"] == {}  # responses: [] sent
    assert [e.type for e in events if e.type.startswith("gate")] == ["gate_opened", "gate_withdrawn"]
    assert "skipped" in [e for e in events if e.type == "assistant_message"][-1].text  # type: ignore[union-attr]
    assert not [e for e in events if e.type == "notice" and e.level == "error"]  # type: ignore[union-attr]
