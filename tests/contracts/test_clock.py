"""The Clock contract, held by the omnigent sink's system clock, the roles' loop clock and the tests'
FakeClock (virtual time): monotonic time never goes back, and a sleep of d seconds lets at least d pass."""

from __future__ import annotations

import pytest

from agy_harness.adapters.sinks.omnigent.transport import SystemClock
from agy_harness.composition.service.clock import LoopClock
from agy_harness.ports.protocols import Clock
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
