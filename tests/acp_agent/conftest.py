"""The module-scoped ``agy-harness acp --sim`` that a module's session tests share
(:mod:`.shared_agent`): one instance per test module (tests/parallel.py keeps those tests on one
xdist worker). A test using it runs in the module's event loop (``@SHARED``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from .shared_agent import SharedAgent, shared_agent


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim_agent() -> AsyncIterator[SharedAgent]:
    """``agy-harness acp --sim --sim-pace 0.05`` (a client without forms or fs): its simulator works in
    the first session's directory, so its tests open their sessions in ``/tmp``."""
    async with shared_agent("--sim-pace", "0.05") as agent:
        yield agent
