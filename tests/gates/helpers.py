"""A session on the simulator (the public API: open_session, events(), answer()) and a watch over
its events."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from agy_harness.adapters.rpc.client import RpcClient
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

    async def ask(self, text: str) -> GateOpened:
        """Send ``text`` as a turn; the next gate agy opens."""
        await self.session.send(text)
        return await self.gate()

    async def turn_over(self) -> None:
        await self.until(lambda e: e.type == "status" and e.status in ("idle", "failed"))  # type: ignore[union-attr]

    async def notice(self, contains: str) -> Notice:
        event = await self.until(lambda e: isinstance(e, Notice) and contains in e.text)
        assert isinstance(event, Notice)
        return event

    @property
    def gates(self) -> list[GateOpened]:
        return [e for e in self.events if isinstance(e, GateOpened)]


#: a human's allow of a permission for this conversation, as agy's RPC takes it
CONVERSATION = {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"}


async def answer_waiting(sim: Simulator, client: RpcClient, permission: dict[str, object]) -> int:
    """Once the turn is parked on its gate: answer the step waiting on a permission over agy's RPC
    (``client``), then wait for the turn to go on; the step's index."""
    await sim.wait_idle(timeout=60)
    [index] = [i for i, s in enumerate(sim.steps()) if s["status"] == "CORTEX_STEP_STATUS_WAITING"]
    trajectory = sim.steps()[index]["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"]
    interaction = {"trajectoryId": trajectory, "stepIndex": index, "permission": permission}
    await client.call("HandleCascadeUserInteraction", {"cascadeId": sim.cascade_id, "interaction": interaction})
    await sim.wait_idle(timeout=60)
    return index
