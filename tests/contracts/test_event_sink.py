"""The EventSink contract, held by every sink of the library and the tests' fake: events in order and
acknowledged (the accepted prefix), a gate asked until the human answers, and a withdrawn gate ends
the ask by ``withdraw`` alone (the harness's own cancel is not needed).

Sinks: the default queue (``open_session``; the board's live sessions use it), omnigent's, the
terminal, JSON lines, ACP's, the omnigent plugin's, the demo's tap, and the tests' RecordingSink (tests/fakes/).
Each case checks what its consumer observes (the terminal's screen, omnigent's stored bodies, the ACP
client's updates, the plugin's turn queue).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from rich.console import Console

from agy_harness.adapters.sinks.jsonl import JsonlSink
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy, elicitation_id, to_wire
from agy_harness.adapters.sinks.queue import QueueSink
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.composition.entrypoints.demo import TapSink
from agy_harness.composition.entrypoints.omnigent_plugin.sink import PluginSink
from agy_harness.composition.root.container import make_container
from agy_harness.ports.events import Event, GateOpened, PermissionRequest, StatusChanged, UserMessage
from agy_harness.ports.protocols import EventSink, GateAnswer
from tests.fakes import RecordingSink
from tests.sinks.omnigent_app import OmnigentApp

C = "cascade-1"
EVENTS: list[Event] = [
    StatusChanged(id="t/u:1/status/running", cascade_id=C, status="running"),
    UserMessage(id="t/u:1/user", cascade_id=C, text="hello"),
    StatusChanged(id="t/2/status/idle", cascade_id=C, status="idle"),
]
GATE = GateOpened(
    id="t/3/gate",
    cascade_id=C,
    step_key="t/3",
    gate_id="g-3",
    kind="permission",
    trajectory_id="t",
    step_index=3,
    tool_name="run_command",
    permission=PermissionRequest(action="run", command_line="ls"),
)


class SinkCase:
    """One sink, the way its human answers a gate, and the ids of the events its consumer shows (in
    the order it shows them); ``shows`` are the events of EVENTS that consumer shows at all."""

    def __init__(
        self,
        sink: EventSink,
        answer: Callable[[], Awaitable[None]],
        received: Callable[[], list[str]],
        shows: list[Event] | None = None,
        closed: Callable[[], bool] | None = None,
    ) -> None:
        self.sink, self.answer, self.received = sink, answer, received
        self.shows = EVENTS if shows is None else shows
        #: what its human sees once the ask ended, where the consumer shows it (None: nothing to see)
        self.closed = closed


def _drained(queue: asyncio.Queue[Event]) -> list[str]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait().id)
    return out


async def _queue_case(queue_sink: QueueSink) -> SinkCase:
    async def answer() -> None:
        while not queue_sink.resolve(GATE.gate_id, GateAnswer(allow=True)):
            await asyncio.sleep(0.01)

    return SinkCase(queue_sink, answer, lambda: _drained(queue_sink.queue))


@contextlib.asynccontextmanager
async def omnigent_case() -> AsyncIterator[SinkCase]:
    app = OmnigentApp()
    async with app.serving():
        omni = OmnigentSink(app.base_url, app.session_id, retry=RetryPolicy(initial=0.01, deadline=3))

        async def answer() -> None:
            await app.push_answer({"action": "accept"}, elicitation_id(GATE.gate_id))  # the card's Approve

        def received() -> list[str]:  # the event each stored body is the wire form of
            posted = [b for b in app.received if b["data"].get("status") != "waiting"]
            return [next(e.id for e in EVENTS if to_wire(e) == b) for b in posted]

        try:
            yield SinkCase(omni, answer, received)
        finally:
            await omni.aclose()


def terminal_case() -> SinkCase:
    console = Console(record=True, width=100, file=io.StringIO())
    replies: asyncio.Queue[str] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def read(_prompt: str = "") -> str:
        return asyncio.run_coroutine_threadsafe(replies.get(), loop).result(5)

    async def answer() -> None:
        await replies.put("y")

    shown = {EVENTS[0].id: "● running", EVENTS[1].id: "❯ hello", EVENTS[2].id: "○ idle"}

    def received() -> list[str]:  # what the screen shows, in the order it shows it
        screen = console.export_text(clear=False)
        return sorted((i for i in shown if shown[i] in screen), key=lambda i: screen.index(shown[i]))

    def closed() -> bool:  # the prompt says agy no longer waits
        return "agy no longer waits for this answer" in console.export_text(clear=False)

    return SinkCase(TerminalSink(console, input_fn=read), answer, received, closed=closed)


def jsonl_case() -> SinkCase:
    out = io.StringIO()
    answers: asyncio.Queue[GateAnswer] = asyncio.Queue()

    async def answerer(gate: GateOpened) -> GateAnswer:
        return await answers.get()

    async def answer() -> None:
        await answers.put(GateAnswer(allow=True))

    lines = lambda: [json.loads(line)["id"] for line in out.getvalue().splitlines()]  # noqa: E731
    return SinkCase(JsonlSink(out, answer=answerer), answer, lines)


class AcpClient:
    """An ACP client's side of the connection: the updates it was sent, permission requests it answers
    when told to, and the requests the agent cancelled."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.cancelled: list[str] = []
        self._answers: asyncio.Queue[Any] = asyncio.Queue()

    async def session_update(self, session_id: str, update: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, *, session_id: str, tool_call: Any, options: Any) -> Any:
        return await self._answers.get()

    async def cancel_outgoing(self, session_id: str, tool_call_id: str) -> bool:
        self.cancelled.append(tool_call_id)
        return True

    async def allow(self) -> None:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        await self._answers.put(
            RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow"))
        )


def acp_case() -> SinkCase:
    from agy_harness.composition.entrypoints.acp.sessions import AcpSession, AcpSink

    client = AcpClient()
    session = AcpSession(client, C, cancel_outgoing=client.cancel_outgoing, forms=False)

    def received() -> list[str]:  # the user's message is the one of EVENTS an ACP client is shown
        texts = [getattr(getattr(u, "content", None), "text", None) for u in client.updates]
        return [EVENTS[1].id] if "hello" in texts else []

    def closed() -> bool:  # the client's permission request is cancelled on the wire
        return client.cancelled == [GATE.step_key]

    return SinkCase(AcpSink(session), client.allow, received, shows=[EVENTS[1]], closed=closed)


def plugin_case() -> SinkCase:
    plugin = PluginSink()  # during an omnigent turn: events onto the turn's queue, gates to its asker
    answers: asyncio.Queue[GateAnswer] = asyncio.Queue()

    async def asker(gate: GateOpened) -> GateAnswer | None:
        return await answers.get()

    plugin.set_asker(asker)

    async def answer() -> None:
        await answers.put(GateAnswer(allow=True))

    return SinkCase(plugin, answer, lambda: _drained(plugin.queue))


def recording_case() -> SinkCase:
    recording = RecordingSink()

    async def answer() -> None:
        await recording.answers.put(GateAnswer(allow=True))

    return SinkCase(recording, answer, lambda: [e.id for e in recording.events])


def demo_case() -> SinkCase:
    inner = recording_case()  # the demo's tap passes everything to the terminal it wraps
    tap = TapSink(inner.sink)
    return SinkCase(tap, inner.answer, lambda: [e.id for e in tap.seen])


@contextlib.asynccontextmanager
async def sink_case(name: str) -> AsyncIterator[SinkCase]:
    if name == "omnigent":
        async with omnigent_case() as case:
            yield case
        return
    if name == "queue":
        yield await _queue_case(QueueSink())
    elif name == "board":  # the sink a board's live session runs on: the composition root's default
        board_sink = make_container(port=1, cascade_id=C).sink()
        assert isinstance(board_sink, QueueSink)
        yield await _queue_case(board_sink)
    else:
        yield {
            "terminal": terminal_case,
            "jsonl": jsonl_case,
            "acp": acp_case,
            "plugin": plugin_case,
            "demo": demo_case,
            "recording": recording_case,
        }[name]()


SINKS = ["queue", "omnigent", "terminal", "jsonl", "acp", "plugin", "demo", "board", "recording"]


@pytest.mark.parametrize("name", SINKS)
async def test_a_sink_takes_events_in_order_and_acknowledges_them(name: str) -> None:
    async with sink_case(name) as case:
        assert isinstance(case.sink, EventSink)
        assert await case.sink.deliver(EVENTS[:2]) == 2
        assert await case.sink.deliver(EVENTS[2:]) == 1
        assert await case.sink.deliver([]) == 0
        assert case.received() == [e.id for e in case.shows]


@pytest.mark.parametrize("name", SINKS)
async def test_a_sink_asks_the_human_and_returns_the_answer(name: str) -> None:
    async with sink_case(name) as case:
        ask = asyncio.create_task(case.sink.ask(GATE))
        await asyncio.sleep(0.05)
        assert not ask.done()  # waits for the human
        await case.answer()
        async with asyncio.timeout(5):
            answer = await ask
        assert answer.action == "accept" and answer.allow is True


@pytest.mark.parametrize("name", SINKS)
async def test_a_withdrawn_gate_ends_the_ask_by_withdraw_alone(name: str) -> None:
    async with sink_case(name) as case:
        ask = asyncio.create_task(case.sink.ask(GATE))
        await asyncio.sleep(0.05)
        await case.sink.withdraw(GATE.gate_id)  # the gate's step left WAITING: nothing else is done
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(5):
                await ask
        if case.closed is not None:
            assert case.closed()
