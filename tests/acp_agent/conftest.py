"""The ``agy-harness acp --sim`` agents that the package's session tests share (:mod:`.shared_agent`):
one of each per test process (package-scoped: tests/parallel.py keeps the tests using one on one
xdist worker). A test using one runs in the package's event loop (``@SHARED``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from .shared_agent import SharedAgent, shared_agent

PACE = ("--sim-pace", "0.05")


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def sim_agent() -> AsyncIterator[SharedAgent]:
    """``agy-harness acp --sim --sim-pace 0.05`` for an editor without forms or fs: its simulator works
    in the first session's directory, so its tests open their sessions in ``/tmp``."""
    async with shared_agent(*PACE) as agent:
        yield agent


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def sim_agent_forms() -> AsyncIterator[SharedAgent]:
    """The same for an editor that takes forms (``elicitation/create``): questions come as forms."""
    async with shared_agent(*PACE, forms=True) as agent:
        yield agent


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def sim_agent_slow() -> AsyncIterator[SharedAgent]:
    """``--sim-pace 1``: a reply takes ~6 s, like a person reads (room to cancel it mid-way)."""
    async with shared_agent("--sim-pace", "1") as agent:
        yield agent
