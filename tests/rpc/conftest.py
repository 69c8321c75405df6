from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .stub import StubServer


@pytest.fixture
async def stub() -> AsyncIterator[StubServer]:
    server = StubServer()
    async with server.running():
        yield server
