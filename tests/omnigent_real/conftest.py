"""The real omnigent server's client, one a test module (``omnigent_server``: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from .helpers import Omnigent


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def omni(omnigent_server: str) -> AsyncIterator[Omnigent]:
    client = Omnigent(omnigent_server)
    yield client
    await client.aclose()
