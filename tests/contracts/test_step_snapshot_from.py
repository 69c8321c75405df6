"""The StepSnapshotFrom contract (issue 47: the one port without a suite), held by the RPC poll source
(on the simulator, agy's ``GetCascadeTrajectorySteps {cascadeId, stepOffset}``) and by the tests' fake
(MemorySnapshotFrom) alike: the steps from an index on, in agy's order, exactly the tail of the whole
read; everything from 0; nothing past the end; the caller's own list; fresh at each read. The services
that read from an index (gate delivery, the emitter's details, the gate watch) check that the step they
want is there and fall back to the whole read when it is not: the suite holds what that check relies on."""

from __future__ import annotations

import pytest

from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.core.steps import parse_step
from agy_harness.ports.protocols import StepSnapshot, StepSnapshotFrom
from tests.fakes import MemorySnapshot, MemorySnapshotFrom

from .conftest import Agy

KINDS = ["rpc", "memory"]


def _snapshot(kind: str, agy: Agy) -> tuple[StepSnapshotFrom, MemorySnapshotFrom]:
    fake = MemorySnapshotFrom(agy.sim.steps())
    return (RpcPollSource(agy.client) if kind == "rpc" else fake), fake


def _keys(raws: list[object]) -> list[object]:
    parsed = [parse_step(r) for r in raws]
    assert all(p is not None for p in parsed)
    return [p.key for p in parsed if p is not None]


async def _two_turns(agy: Agy) -> None:
    for text in ("Say hello in one short sentence.", "view README.md"):
        await agy.sim.submit_user_turn(text)
        await agy.sim.wait_idle(10)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_read_from_an_index_is_the_tail_of_the_whole_read(kind: str, agy: Agy) -> None:
    await _two_turns(agy)
    snapshot, _ = _snapshot(kind, agy)
    assert isinstance(snapshot, StepSnapshotFrom) and isinstance(snapshot, StepSnapshot)
    whole = _keys(await snapshot.read_steps(agy.cascade_id))  # type: ignore[attr-defined]
    assert len(whole) >= 4
    for offset in range(len(whole) + 1):
        assert _keys(await snapshot.read_steps_from(agy.cascade_id, offset)) == whole[offset:]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_read_from_past_the_end_is_empty_not_an_error(kind: str, agy: Agy) -> None:
    await _two_turns(agy)
    snapshot, _ = _snapshot(kind, agy)
    whole = await snapshot.read_steps_from(agy.cascade_id, 0)
    assert await snapshot.read_steps_from(agy.cascade_id, len(whole)) == []
    assert await snapshot.read_steps_from(agy.cascade_id, len(whole) + 100) == []


@pytest.mark.parametrize("kind", KINDS)
async def test_each_read_from_an_index_is_fresh_and_the_callers_own(kind: str, agy: Agy) -> None:
    await agy.sim.submit_user_turn("Say hello in one short sentence.")
    await agy.sim.wait_idle(10)
    snapshot, fake = _snapshot(kind, agy)
    first = await snapshot.read_steps_from(agy.cascade_id, 1)
    n = len(first)
    assert n >= 1
    first.clear()  # the caller's own list: the next read is whole again
    assert len(await snapshot.read_steps_from(agy.cascade_id, 1)) == n
    await agy.sim.submit_user_turn("thanks, that is all")  # agy moves on: the next read shows it
    await agy.sim.wait_idle(10)
    fake.steps = agy.sim.steps()
    assert len(await snapshot.read_steps_from(agy.cascade_id, 1)) > n


def test_the_whole_read_fake_is_not_a_read_from_an_index() -> None:
    """The services take the index path only where the port is held; a snapshot without it is read whole."""
    assert not isinstance(MemorySnapshot(), StepSnapshotFrom)
    assert isinstance(MemorySnapshotFrom(), StepSnapshotFrom)
