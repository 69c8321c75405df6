"""One contract suite per port, run against every adapter of that port.

StepSource (stream, poll, transcript tail): the same scripted conversation through the whole harness
commits the same events, deltas only where the source can stream. EventSink (queue, omnigent,
terminal, JSON lines): in order, the accepted prefix, gates asked and withdrawn. CursorStore (file,
memory): missing, round trip, overwrite.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from rich.console import Console

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.transcript import TranscriptWriter
from agy_harness.adapters.sinks.jsonl import JsonlSink
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy, elicitation_id, to_wire
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.adapters.store.cursor_file import FileCursorStore, MemoryCursorStore
from agy_harness.adapters.transcript.tail import TranscriptTailSource
from agy_harness.composition.root.container import AgyContainer, make_container
from agy_harness.composition.root.session import QueueSink
from agy_harness.ports.events import Event, GateOpened, StatusChanged, UserMessage
from agy_harness.ports.protocols import Cursor, CursorStore, EventSink, GateAnswer, StepSource
from tests.fakes import RecordingSink
from tests.sinks.omnigent_app import OmnigentApp

from .helpers import FAST, signature

TURNS = ["Say hello in one short sentence.", "autorun `ls -la` then list the directory", "view README.md"]


def one_source(name: str, container: AgyContainer, root: Path) -> providers.Provider[StepSource]:
    """The container's own provider of that source (the transcript tail's root is the writer's)."""
    if name == "stream":
        return container.stream
    if name == "poll":
        return container.poll
    return providers.Singleton(TranscriptTailSource, root, poll_interval=0.05)


async def through(source_name: str, tmp_path: Path) -> list[Event]:
    async with Simulator(pace=0.05) as sim:
        writer = TranscriptWriter(tmp_path)
        writer.attach(sim)
        sink = RecordingSink()
        async with RpcClient(sim.base_url) as client:
            container = make_container(
                base_url=sim.base_url,
                cascade_id=sim.cascade_id,
                sink=sink,
                options=FAST,
                poll_interval=0.05,
                stream_idle_timeout=5.0,
            )
            container.client.override(providers.Object(client))
            # one source alone, whatever the version gate would pick; a fixed model for turns
            container.step_sources.override(providers.List(one_source(source_name, container, tmp_path)))
            container.model_resolver.override(providers.Object(lambda _c: _model()))
            container.turn_senders.override(providers.List(container.rpc_turns))
            container.directory.override(providers.Object(None))
            container.interrupter.override(providers.Object(None))
            harness = container.harness()
            assert [s.name for s in harness.sources] == [source_name]
            async with harness:
                for i, text in enumerate(TURNS, 1):
                    await harness.send(text)
                    await sink.wait_for(
                        lambda i=i: (
                            sum(1 for e in sink.events if e.type == "status" and e.status == "idle") == i
                        ),  # type: ignore[union-attr]
                        timeout=15,
                    )
        writer.close()
    return sink.events


async def _model() -> str:
    return "MODEL_PLACEHOLDER_M20"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return signature(asyncio.run(through("stream", tmp_path_factory.mktemp("ref"))))


@pytest.mark.parametrize("source", ["stream", "poll", "transcript"])
async def test_every_step_source_commits_the_same_events(
    source: str, reference: list[str], tmp_path: Path
) -> None:
    events = await through(source, tmp_path)
    assert signature(events) == reference
    deltas = [e for e in events if e.type == "text_delta"]
    if source == "stream":
        assert deltas
    if source == "transcript":  # completed steps only: it cannot stream
        assert not deltas


# -- EventSink ----------------------------------------------------------------------------------

C = "cascade-1"
EVENTS: list[Event] = [
    StatusChanged(id="t/u:1/status/running", cascade_id=C, status="running"),
    UserMessage(id="t/u:1/user", cascade_id=C, text="hello"),
    StatusChanged(id="t/2/status/idle", cascade_id=C, status="idle"),
]
GATE = GateOpened(
    id="t/3/gate", cascade_id=C, gate_id="g-3", kind="permission", trajectory_id="t", step_index=3
)


class SinkCase:
    """One sink adapter plus the way its human answers a gate, and a view of what it received."""

    def __init__(self, sink: EventSink, answer: Callable[[], Any], received: Callable[[], list[str]]) -> None:
        self.sink, self.answer, self.received = sink, answer, received


@contextlib.asynccontextmanager
async def sink_case(name: str) -> AsyncIterator[SinkCase]:
    if name == "queue":
        queue_sink = QueueSink()

        def drained() -> list[str]:
            out = []
            while not queue_sink.queue.empty():
                out.append(queue_sink.queue.get_nowait().id)
            return out

        async def answer_queue() -> None:
            while not queue_sink.resolve(GATE.gate_id, GateAnswer(allow=True)):
                await asyncio.sleep(0.01)

        yield SinkCase(queue_sink, answer_queue, drained)
    elif name == "omnigent":
        app = OmnigentApp()
        async with app.serving():
            omni = OmnigentSink(app.base_url, app.session_id, retry=RetryPolicy(initial=0.01, deadline=3))

            async def answer_omnigent() -> None:
                await app.push_answer(
                    {"action": "accept"}, elicitation_id(GATE.gate_id)
                )  # the card's Approve

            def received() -> list[str]:  # the event each accepted body is the wire form of
                posted = [b for b in app.received if b["data"].get("status") != "waiting"]
                return [next(e.id for e in EVENTS if to_wire(e) == b) for b in posted]

            try:
                yield SinkCase(omni, answer_omnigent, received)
            finally:
                await omni.aclose()
    elif name == "terminal":
        console = Console(record=True, width=100, file=io.StringIO())
        replies: asyncio.Queue[str] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def read(_prompt: str = "") -> str:
            return asyncio.run_coroutine_threadsafe(replies.get(), loop).result(5)

        terminal = TerminalSink(console, input_fn=read)
        seen: list[str] = []
        original = terminal.deliver

        async def deliver(events: Any) -> int:
            n = await original(events)
            seen.extend(e.id for e in events[:n])
            return n

        terminal.deliver = deliver  # type: ignore[method-assign]

        async def answer_terminal() -> None:
            await replies.put("y")

        yield SinkCase(terminal, answer_terminal, lambda: list(seen))
    elif name == "recording":
        recording = RecordingSink()

        async def answer_recording() -> None:
            await recording.answers.put(GateAnswer(allow=True))

        yield SinkCase(recording, answer_recording, lambda: [e.id for e in recording.events])
    else:
        out = io.StringIO()
        answers: asyncio.Queue[GateAnswer] = asyncio.Queue()

        async def answerer(gate: GateOpened) -> GateAnswer:
            return await answers.get()

        async def answer_jsonl() -> None:
            await answers.put(GateAnswer(allow=True))

        import json

        yield SinkCase(
            JsonlSink(out, answer=answerer),
            answer_jsonl,
            lambda: [json.loads(line)["id"] for line in out.getvalue().splitlines()],
        )


SINKS = ["queue", "omnigent", "terminal", "jsonl", "recording"]  # the last: tests' fake, held to it too


@pytest.mark.parametrize("name", SINKS)
async def test_a_sink_takes_events_in_order_and_acknowledges_them(name: str) -> None:
    async with sink_case(name) as case:
        assert await case.sink.deliver(EVENTS[:2]) == 2
        assert await case.sink.deliver(EVENTS[2:]) == 1
        assert await case.sink.deliver([]) == 0
        assert case.received() == [e.id for e in EVENTS]


@pytest.mark.parametrize("name", SINKS)
async def test_a_sink_asks_the_human_and_returns_the_answer(name: str) -> None:
    async with sink_case(name) as case:
        ask = asyncio.create_task(case.sink.ask(GATE))
        await asyncio.sleep(0.05)
        assert not ask.done()  # waits for the human
        await case.answer()
        answer = await asyncio.wait_for(ask, 5)
        assert answer.action == "accept" and answer.allow is not False


@pytest.mark.parametrize("name", SINKS)
async def test_a_withdrawn_gate_stops_the_ask(name: str) -> None:
    async with sink_case(name) as case:
        ask = asyncio.create_task(case.sink.ask(GATE))
        await asyncio.sleep(0.05)
        await case.sink.withdraw(GATE.gate_id)  # the gate's step left WAITING: withdraw alone ends it
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(ask, 5)


# -- CursorStore --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_a_cursor_store_round_trips_and_overwrites(kind: str, tmp_path: Path) -> None:
    store: CursorStore = FileCursorStore(tmp_path) if kind == "file" else MemoryCursorStore()
    assert store.load("c/1") is None
    store.save(Cursor(cascade_id="c/1", committed=["a"], state={"status": "idle", "input_tokens": 5}))
    store.save(Cursor(cascade_id="other", committed=["x"]))
    store.save(Cursor(cascade_id="c/1", committed=["a", "b"], state={"status": "running"}))
    loaded = store.load("c/1")
    assert loaded is not None and loaded.committed == ["a", "b"] and loaded.state == {"status": "running"}
    assert store.load("other").committed == ["x"]  # type: ignore[union-attr]
