from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .omnigent_app import OmnigentApp


@pytest.fixture
async def omnigent() -> AsyncIterator[OmnigentApp]:
    app = OmnigentApp()
    async with app.serving():
        yield app
