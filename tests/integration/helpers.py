"""Driving the whole harness (open_session) against the simulator over real TLS HTTP/2."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import Session, open_session
from agy_harness.composition.service.harness import HarnessOptions
from agy_harness.ports.events import Event
from tests.fakes import RecordingSink

FAST = HarnessOptions(fallback_backoff=0.05, max_backoff=0.4, sink_retry=0.01, directory_interval=0.1)
LIVE_ONLY = {"text_delta", "reasoning_delta", "notice", "gate_opened", "gate_withdrawn", "rotation"}
IDENTITY = {"id", "cascade_id", "step_key", "call_id", "message_id", "gate_id"}


def committed(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type not in LIVE_ONLY]


def signature(events: list[Event]) -> list[str]:
    """The committed events without their run-specific ids (a new simulator mints new uuids)."""
    out = []
    for e in committed(events):
        d = {k: v for k, v in e.model_dump(mode="json").items() if k not in IDENTITY}
        out.append(json.dumps(d, sort_keys=True))
    return out


def texts_by_message(events: list[Event]) -> dict[str, str]:
    streamed: dict[str, str] = {}
    for e in events:
        if e.type == "text_delta":
            streamed[e.message_id] = streamed.get(e.message_id, "") + e.delta  # type: ignore[union-attr]
    return streamed


def assert_exactly_once(events: list[Event]) -> None:
    ids = [e.id for e in committed(events)]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    # deltas may only repeat with identical content (same id, same delta)
    seen: dict[str, str] = {}
    for e in events:
        if e.type == "text_delta":
            assert seen.setdefault(e.id, e.delta) == e.delta  # type: ignore[union-attr]


def turn_over(sink: RecordingSink, start: int) -> Callable[[], bool]:
    def done() -> bool:
        return any(
            e.type == "status" and e.status in ("idle", "failed")  # type: ignore[union-attr]
            for e in sink.events[start:]
        )

    return done


@asynccontextmanager
async def harness_on(sim: Simulator, sink: RecordingSink, **kw: Any) -> AsyncIterator[Session]:
    """open_session scoped to this process (the simulator listens here), so agy restarts are followed."""
    kw.setdefault("options", FAST)
    kw.setdefault("poll_interval", 0.05)
    kw.setdefault("stream_idle_timeout", 0.5)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, **kw) as session:
        yield session


async def run_turn(session: Session, sink: RecordingSink, text: str, timeout: float = 15.0) -> None:
    start = len(sink.events)
    await session.send(text)
    await sink.wait_for(
        lambda: any(
            e.type == "user_message" and e.text == text  # type: ignore[union-attr]
            for e in sink.events[start:]
        ),
        timeout,
    )
    start = next(i for i in range(start, len(sink.events)) if sink.events[i].type == "user_message")
    await sink.wait_for(turn_over(sink, start + 1), timeout)
