"""The contracts of the ports that read agy, held by the RPC adapters (on the simulator) and by the
tests' fakes (tests/fakes/) alike: StepSnapshot, CascadeDirectory, CascadeStarter, ModelCatalog."""

from __future__ import annotations

import pytest

from agy_harness.adapters.rpc.actions import RpcCascadeDirectory, RpcCascadeStarter, RpcModelCatalog
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.core.steps import parse_step
from agy_harness.ports.protocols import (
    CascadeDirectory,
    CascadeStarter,
    CascadeSummary,
    ModelCatalog,
    ModelInfo,
    StepSnapshot,
)
from tests.fakes import FixedCatalog, ListedDirectory, MemorySnapshot, NewCascades

from .conftest import Agy

# -- StepSnapshot -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rpc", "memory"])
async def test_a_snapshot_reads_every_step_of_the_cascade_fresh_each_time(kind: str, agy: Agy) -> None:
    await agy.sim.submit_user_turn("Say hello in one short sentence.")
    await agy.sim.wait_idle(10)
    fake = MemorySnapshot(agy.sim.steps())
    snapshot: StepSnapshot = RpcPollSource(agy.client) if kind == "rpc" else fake
    assert isinstance(snapshot, StepSnapshot)
    steps = await snapshot.read_steps(agy.cascade_id)
    parsed = [parse_step(s) for s in steps]
    assert parsed and all(p is not None for p in parsed)
    assert next(p.type for p in parsed if p is not None) == "USER_INPUT"
    steps.clear()  # the caller's own list
    assert len(await snapshot.read_steps(agy.cascade_id)) == len(parsed)
    await agy.sim.submit_user_turn("thanks, that is all")  # agy moves on: the next read shows it
    await agy.sim.wait_idle(10)
    fake.steps = agy.sim.steps()
    assert len(await snapshot.read_steps(agy.cascade_id)) > len(parsed)


# -- CascadeDirectory ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rpc", "listed"])
async def test_a_directory_lists_the_cascade_with_its_status(kind: str, agy: Agy) -> None:
    listed = ListedDirectory([CascadeSummary(cascade_id=agy.cascade_id, status="CASCADE_RUN_STATUS_IDLE")])
    directory: CascadeDirectory = RpcCascadeDirectory(agy.client, share=False) if kind == "rpc" else listed
    assert isinstance(directory, CascadeDirectory)
    summaries = await directory.list_cascades()
    assert all(isinstance(s, CascadeSummary) for s in summaries)
    [ours] = [s for s in summaries if s.cascade_id == agy.cascade_id]
    assert ours.status.startswith("CASCADE_RUN_STATUS_")


# -- CascadeStarter -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rpc", "new"])
async def test_a_started_conversation_is_a_new_one_agys_directory_lists(kind: str, agy: Agy) -> None:
    listed = ListedDirectory([CascadeSummary(cascade_id=agy.cascade_id, status="CASCADE_RUN_STATUS_IDLE")])
    directory: CascadeDirectory = RpcCascadeDirectory(agy.client, share=False) if kind == "rpc" else listed
    starter: CascadeStarter = RpcCascadeStarter(agy.client) if kind == "rpc" else NewCascades(listed)
    assert isinstance(starter, CascadeStarter)
    first, second = await starter.start(), await starter.start()
    assert first and second and len({first, second, agy.cascade_id}) == 3  # new each time
    listed_ids = {s.cascade_id for s in await directory.list_cascades()}
    assert {first, second, agy.cascade_id} <= listed_ids  # the bound one is still there
    if kind == "rpc":
        assert agy.sim.cascade_id == agy.cascade_id  # starting one does not move agy's current one


# -- ModelCatalog -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rpc", "fixed"])
async def test_a_catalog_names_agys_models_with_at_most_one_default(kind: str, agy: Agy) -> None:
    fixed = FixedCatalog([ModelInfo(model="M1", label="One", default=True), ModelInfo(model="M2")])
    catalog: ModelCatalog = RpcModelCatalog(agy.client) if kind == "rpc" else fixed
    assert isinstance(catalog, ModelCatalog)
    models = await catalog.models()
    assert models and all(isinstance(m, ModelInfo) and m.model for m in models)
    assert len({m.model for m in models}) == len(models) and sum(m.default for m in models) <= 1
