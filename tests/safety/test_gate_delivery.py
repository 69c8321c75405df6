"""Finding 2: an answer is never lost while agy still waits for it; finding 13 (interrupt)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import Session, open_session
from agy_harness.composition.service.conversation import HarnessOptions
from agy_harness.ports.events import Event, GateOpened, Notice

OPTIONS = HarnessOptions(fallback_backoff=0.05, max_backoff=0.2, sink_retry=0.01, directory_interval=0.1)


def run_steps(sim: Simulator) -> list[dict[str, Any]]:
    return [s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]


async def until(s: Session, events: list[Event], done: Any, timeout: float = 15) -> Event:
    async def scan() -> Event:
        async for event in s.events():
            events.append(event)
            if done(event):
                return event
        raise AssertionError("events ended")

    return await asyncio.wait_for(scan(), timeout)


def idle(event: Event) -> bool:
    return event.type == "status" and event.status == "idle"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("status", "times", "message"),
    [(503, 3, ""), (500, 3, "internal error: try again"), (502, 2, ""), (504, 2, "")],
    ids=["503", "plain-500", "502", "504"],
)
async def test_transient_failures_on_delivery_are_retried_until_agy_takes_the_answer(
    sim: Simulator, status: int, times: int, message: str
) -> None:
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=OPTIONS) as s:
        await s.send("run: git status")
        events: list[Event] = []
        gate = await until(s, events, lambda e: isinstance(e, GateOpened))
        sim.faults.fail("HandleCascadeUserInteraction", status=status, times=times, message=message)
        await s.answer(gate.gate_id, True)  # type: ignore[union-attr]
        await until(s, events, idle)
    assert sim.faults.fired.count(f"fail:HandleCascadeUserInteraction:{status}") == times
    [step] = run_steps(sim)
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"  # the human's answer reached agy: it ran
    assert not [e for e in events if isinstance(e, Notice) and e.level == "error"]


async def test_a_failed_re_read_falls_back_to_the_gate_the_stream_shows(sim: Simulator) -> None:
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=OPTIONS) as s:
        await s.send("run: git status")
        events: list[Event] = []
        gate = await until(s, events, lambda e: isinstance(e, GateOpened))
        sim.faults.fail("GetCascadeTrajectorySteps", status=503, times=50)  # the poll is down for good
        await s.answer(gate.gate_id, True)  # type: ignore[union-attr]
        await until(s, events, idle)
    [step] = run_steps(sim)
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"


async def test_an_answer_agy_never_takes_ends_with_a_notice_at_the_deadline(sim: Simulator) -> None:
    options = HarnessOptions(
        fallback_backoff=0.05, max_backoff=0.1, directory_interval=0.1, answer_deadline=1.0
    )
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=options) as s:
        await s.send("run: git status")
        events: list[Event] = []
        gate = await until(s, events, lambda e: isinstance(e, GateOpened))
        sim.faults.fail("HandleCascadeUserInteraction", status=503, times=10_000)
        with pytest.raises(RuntimeError, match="could not be answered"):
            await s.answer(gate.gate_id, True)  # type: ignore[union-attr]
        notice = await until(s, events, lambda e: isinstance(e, Notice) and e.level == "error")
        assert "did not take the answer within 1s" in notice.text  # type: ignore[union-attr]
        attempts = sim.faults.fired.count("fail:HandleCascadeUserInteraction:503")
        assert attempts > 3  # retried for the whole deadline (it gave up after 3 tries in 3.5 s)
        [step] = run_steps(sim)
        assert step["status"] == "CORTEX_STEP_STATUS_WAITING"  # still parked, nothing guessed


async def test_interrupt_reports_cancelled_false_when_agy_is_unreachable() -> None:
    sim = Simulator(pace=0.05, gate_timeout=None)
    await sim.start()
    try:
        async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=OPTIONS) as s:
            await sim.stop()  # agy is gone
            report = await s.interrupt()  # raised RpcUnreachable before
            assert report.cancelled is False
            assert "could not cancel" in report.detail
    finally:
        await sim.stop()
