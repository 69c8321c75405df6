"""A session on the simulator whose events are collected in the background, and waits on them."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import Session, open_session
from agy_harness.composition.service.conversation import HarnessOptions
from agy_harness.ports.events import Event, GateOpened, GateWithdrawn, Notice
from agy_harness.ports.tasks import reap

FAST = HarnessOptions(
    fallback_backoff=0.05, max_backoff=0.2, sink_retry=0.01, directory_interval=0.1, answer_deadline=3.0
)
WAIT = 20.0


@dataclass
class Watched:
    session: Session
    events: list[Event] = field(default_factory=list)

    async def until(self, done: Callable[[Event], bool], what: str, timeout: float = WAIT) -> Event:
        """The first event (seen so far or later) for which ``done`` holds."""
        async with asyncio.timeout(timeout):
            seen = 0
            while True:
                for event in self.events[seen:]:
                    if done(event):
                        return event
                seen = len(self.events)
                await asyncio.sleep(0.01)
        raise AssertionError(what)  # pragma: no cover

    async def gate(self, command: str = "", *, after: int = 0, timeout: float = WAIT) -> GateOpened:
        """The next gate opened (after event number ``after``) for ``command`` (any, if empty)."""

        def match(e: Event) -> bool:
            if not isinstance(e, GateOpened) or self.events.index(e) < after:
                return False
            return not command or (e.permission is not None and e.permission.command_line == command)

        found = await self.until(match, f"a gate for {command!r}", timeout)
        assert isinstance(found, GateOpened)
        return found

    async def withdrawn(self, gate_id: str) -> GateWithdrawn:
        found = await self.until(
            lambda e: isinstance(e, GateWithdrawn) and e.gate_id == gate_id, f"{gate_id} withdrawn"
        )
        assert isinstance(found, GateWithdrawn)
        return found

    async def idle(self, *, after: int = 0, timeout: float = WAIT) -> None:
        await self.until(
            lambda e: e.type == "status" and e.status == "idle" and self.events.index(e) >= after,  # type: ignore[union-attr]
            "the turn to end",
            timeout,
        )

    def notices(self, level: str = "") -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice) and (not level or e.level == level)]

    async def notice(self, containing: str, level: str = "") -> str:
        """The text of the first notice (of ``level``, if given) containing ``containing``."""
        found = await self.until(
            lambda e: isinstance(e, Notice) and containing in e.text and (not level or e.level == level),
            f"a notice saying {containing!r}",
            timeout=5,
        )
        assert isinstance(found, Notice)
        return found.text


@asynccontextmanager
async def watched(sim: Simulator, **kw: Any) -> AsyncIterator[Watched]:
    kw.setdefault("options", FAST)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, **kw) as session:
        out = Watched(session)

        async def collect() -> None:
            async for event in session.events():
                out.events.append(event)

        task = asyncio.create_task(collect())
        try:
            yield out
        finally:
            task.cancel()
            await reap(task)


def waiting(sim: Simulator, index: int) -> bool:
    return sim.steps()[index]["status"] == "CORTEX_STEP_STATUS_WAITING"
