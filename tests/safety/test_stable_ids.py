"""Findings 8 and 9: an event id names one content, whichever projection committed the step and
across restarts from an older saved state."""

from __future__ import annotations

import os
from pathlib import Path

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.composition.root.session import open_session
from agy_harness.core.reconciler import MapperState, Reconciler
from agy_harness.ports.events import COMMITTED_TYPES, Event, GateOpened
from agy_harness.ports.protocols import Cursor
from tests.core.fixtures import CASCADE, fixture
from tests.integration.helpers import FAST


def committed(events: list[Event]) -> list[dict[str, object]]:
    return [e.model_dump(mode="json") for e in events if e.type in COMMITTED_TYPES]


async def test_poll_and_stream_commit_identical_events_for_a_question(sim: Simulator) -> None:
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s:
        await s.send("ask multiple: which checks should run?")
        async for event in s.events():
            if isinstance(event, GateOpened):
                await s.answer(event.gate_id, ["1", "3"])
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    async with RpcClient(sim.base_url) as client:
        poll = await RpcPollSource(client).read_steps(sim.cascade_id)
        batches = RpcStreamSource(client).batches(sim.cascade_id)
        first = await anext(batches)
        await batches.aclose()  # type: ignore[attr-defined]
    by_poll = Reconciler(sim.cascade_id).feed_all(poll)
    by_stream = Reconciler(sim.cascade_id).feed_all(first.steps)
    calls = [e for e in by_poll if e.type == "tool_call" and e.name == "ask_question"]  # type: ignore[union-attr]
    assert calls and calls[0].arguments["questions"][0]["options"]  # type: ignore[union-attr]
    assert committed(by_stream) == committed(by_poll)


def generating(text: str) -> dict[str, object]:
    step = fixture("planner_response_text")
    step["status"] = "CORTEX_STEP_STATUS_GENERATING"
    step["plannerResponse"]["response"] = step["plannerResponse"]["modifiedResponse"] = text
    return step


def test_a_delta_id_names_the_same_text_after_a_restart_from_an_older_cursor(tmp_path: Path) -> None:
    store = FileCursorStore(tmp_path)
    first = Reconciler(CASCADE)
    seen: dict[str, tuple[str, bool]] = {}

    def record(events: list[Event]) -> None:
        for e in events:
            if e.type == "text_delta":
                content = (e.delta, e.final)  # type: ignore[union-attr]
                assert seen.setdefault(e.id, content) == content, f"{e.id} named {seen[e.id]}, now {content}"

    record(first.feed(generating("Hello")))
    store.save(Cursor(cascade_id=CASCADE, state=first.state.model_dump(mode="json")))  # the last save
    record(first.feed(generating("Hello, wor")))  # delivered to the sink, then killed before the save
    loaded = store.load(CASCADE)
    assert loaded is not None
    second = Reconciler(CASCADE, MapperState.model_validate(loaded.state))
    record(second.feed(generating("Hello, world! And more.")))  # raised: the same id, longer text
    done = fixture("planner_response_text")
    record(second.feed(done))
    assert len(seen) >= 3
