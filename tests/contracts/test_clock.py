"""The Clock contract, held by the omnigent sink's system clock, the roles' loop clock and the tests'
FakeClock (virtual time): monotonic time never goes back, and a sleep of d seconds lets at least d pass.
The SessionClock contract (the loop clock, FakeClock): a wait ends when its event is set, or after its
timeout has passed on that clock."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.adapters.sinks.omnigent.transport import SystemClock
from agy_harness.composition.service.clock import LoopClock
from agy_harness.ports.protocols import Clock, SessionClock
from tests.fakes import FakeClock


def _clock(kind: str) -> Clock:
    return {"system": SystemClock, "loop": LoopClock, "fake": FakeClock}[kind]()


@pytest.mark.parametrize("kind", ["system", "loop", "fake"])
async def test_a_clock_is_monotonic_and_sleeps_at_least_as_asked(kind: str) -> None:
    clock = _clock(kind)
    assert isinstance(clock, Clock)
    before = clock.monotonic()
    await clock.sleep(0.02)
    after = clock.monotonic()
    assert after - before >= 0.02 - 1e-6
    await clock.sleep(0)
    assert clock.monotonic() >= after


@pytest.mark.parametrize("kind", ["loop", "fake"])
async def test_a_session_clock_waits_for_its_event_or_its_timeout(kind: str) -> None:
    clock = _clock(kind)
    assert isinstance(clock, SessionClock)
    event = asyncio.Event()
    before = clock.monotonic()
    assert await clock.wait(event, 0.05) is False  # nothing happened: the timeout passed
    assert clock.monotonic() - before >= 0.05 - 1e-6

    async def set_soon() -> None:
        await asyncio.sleep(0)
        event.set()

    setter = asyncio.create_task(set_soon())
    before = clock.monotonic()
    assert await clock.wait(event, 60.0) is True  # ends when the event is set, long before the timeout
    assert clock.monotonic() - before < 60.0
    await setter
    assert await clock.wait(event, 0.0) is True  # already set
