"""The agy the contract suites run their RPC adapters against: the simulator, with an RPC client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator


@dataclass
class Agy:
    sim: Simulator
    client: RpcClient

    @property
    def cascade_id(self) -> str:
        return self.sim.cascade_id

    def steps_of(self, kind: str) -> list[dict[str, Any]]:
        return [s for s in self.sim.steps() if s["type"] == f"CORTEX_STEP_TYPE_{kind}"]


@pytest.fixture
async def agy() -> AsyncIterator[Agy]:
    async with Simulator(pace=0.05, gate_timeout=None) as sim, RpcClient(sim.base_url) as client:
        yield Agy(sim, client)
