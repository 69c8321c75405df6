"""Shared fixtures for the whole suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agy_harness.adapters.simulator import Simulator


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    """A running agy simulator (profile 1.0.10, fast pacing, gates never time out); stopped after."""
    async with Simulator(profile="1.0.10", gate_timeout=None) as running:
        yield running
