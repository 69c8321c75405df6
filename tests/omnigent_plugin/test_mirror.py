"""The mirror's gate path between omnigent's turns (composition/omnigent_plugin/mirror.py), against the
fake omnigent of tests/sinks (its hook and events routes, in the shapes of the real server's): the real
server is driven in test_between_turns.py; what a real server does not do on demand (refuse the hook) is
checked here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agy_harness.composition.entrypoints.omnigent_plugin.mirror import OutsideMirror
from tests.sinks.omnigent_app import OmnigentApp
from tests.sinks.samples import PERMISSION_GATE


@pytest.fixture
async def omnigent() -> AsyncIterator[OmnigentApp]:
    app = OmnigentApp()
    async with app.serving():
        yield app


async def test_a_gate_is_parked_at_once_without_touching_the_sessions_status(omnigent: OmnigentApp) -> None:
    mirror = OutsideMirror(omnigent.base_url, omnigent.session_id)
    try:
        ask = asyncio.create_task(mirror.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: bool(omnigent.hook_posts))
        await omnigent.push_answer({"action": "accept"})
        answer = await asyncio.wait_for(ask, 30)
    finally:
        await mirror.close()
    assert answer is not None and answer.allow is True
    assert "external_session_status" not in omnigent.types()  # omnigent's runner owns the status


async def test_a_refused_hook_sends_gates_back_to_omnigents_turns(omnigent: OmnigentApp) -> None:
    omnigent.token = "needed"  # a server wanting credentials the harness process does not have
    mirror = OutsideMirror(omnigent.base_url, omnigent.session_id)
    try:
        assert await asyncio.wait_for(mirror.ask(PERMISSION_GATE), 30) is None
        hooks = len([h for h in omnigent.hits if "/hooks/" in h.path])
        assert await asyncio.wait_for(mirror.ask(PERMISSION_GATE), 30) is None
        assert len([h for h in omnigent.hits if "/hooks/" in h.path]) == hooks  # not asked again
    finally:
        await mirror.close()
