"""A session on the simulator (the public API: open_session, events(), answer()) and a watch over
its events."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import Session, open_session
from agy_harness.ports.events import Event, GateOpened, Notice
from tests.integration.helpers import FAST


@asynccontextmanager
async def session_on(sim: Simulator, **kw: Any) -> AsyncIterator[Session]:
    kw.setdefault("options", FAST)
    kw.setdefault("poll_interval", 0.05)
    kw.setdefault("stream_idle_timeout", 0.5)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, **kw) as session:
        yield session


class Watch:
    """Every event the session yields, read on demand: wait for the next gate, a turn's end, a notice."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.events: list[Event] = []
        self._seen = 0

    async def until(self, predicate: Callable[[Event], bool], timeout: float = 20.0) -> Event:
        for event in self.events[self._seen :]:
            self._seen += 1
            if predicate(event):
                return event
        async with asyncio.timeout(timeout):
            async for event in self.session.events():
                self.events.append(event)
                self._seen = len(self.events)
                if predicate(event):
                    return event
        raise AssertionError("the session's events ended")

    async def gate(self) -> GateOpened:
        event = await self.until(lambda e: isinstance(e, GateOpened))
        assert isinstance(event, GateOpened)
        return event

    async def turn_over(self) -> None:
        await self.until(lambda e: e.type == "status" and e.status in ("idle", "failed"))  # type: ignore[union-attr]

    async def notice(self, contains: str) -> Notice:
        event = await self.until(lambda e: isinstance(e, Notice) and contains in e.text)
        assert isinstance(event, Notice)
        return event

    @property
    def gates(self) -> list[GateOpened]:
        return [e for e in self.events if isinstance(e, GateOpened)]
