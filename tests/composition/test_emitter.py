"""The emitter on its own: order, the accepted prefix, the cursor after acks, the bus last."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from typing import Any

from agy_harness.adapters.store.cursor_file import MemoryCursorStore
from agy_harness.composition.service.clock import LoopClock
from agy_harness.composition.service.conversation import Conversation, HarnessOptions, HarnessStats
from agy_harness.composition.service.emitter import Emitter
from agy_harness.ports.events import Event, Notice
from agy_harness.ports.protocols import StepBatch
from tests.core.fixtures import CASCADE, fixture
from tests.fakes import FakeClock, MemorySnapshot, ObservedCursorStore, RecordingSink

FAST = HarnessOptions(sink_retry=0.001, max_backoff=0.01)


def notice(i: int, cascade: str = CASCADE) -> Notice:
    return Notice(id=f"n{i}", cascade_id=cascade, text=f"note {i}")


def make(
    sink: RecordingSink, cursors: MemoryCursorStore | None = None, steps: list[Any] | None = None
) -> Emitter:
    return Emitter(
        Conversation(CASCADE, cursors),
        snapshot=MemorySnapshot(steps),
        sink=sink,
        cursor_store=cursors,
        options=FAST,
        stats=HarnessStats(),
        clock=FakeClock(),
    )


async def test_events_reach_the_sink_in_order_through_outages_and_partial_acceptance() -> None:
    sink = RecordingSink()
    sink.fail_next, sink.accept_at_most = 2, 2
    emitter = make(sink)
    await emitter.emit([notice(i) for i in range(5)])
    assert [e.id for e in sink.events] == [f"n{i}" for i in range(5)]
    assert emitter.stats.events == 5


async def test_the_cursor_follows_the_bound_conversation_only() -> None:
    sink, cursors = RecordingSink(), MemoryCursorStore()
    emitter = make(sink, cursors)
    await emitter.apply(StepBatch(cascade_id=CASCADE, steps=(fixture("user_input"),), source="stream"))
    assert cursors.saves == 1 and cursors.load(CASCADE).state["status"] == "running"  # type: ignore[union-attr]
    await emitter.emit([notice(1)])  # a notice is not committed content
    child = Conversation("child").reconciler
    await emitter.apply(StepBatch(cascade_id="child", steps=(fixture("user_input"),)), child)
    assert cursors.saves == 1 and cursors.load("child") is None  # a sub-agent's events are not cursored
    assert [e.cascade_id for e in sink.events][-1] == "child"
    assert emitter.stats.batches == {"stream": 1, "?": 1}


async def test_the_cursor_is_saved_only_after_the_sink_took_everything() -> None:
    sink = RecordingSink()
    sink.fail_next = 1
    saved_when: list[int] = []
    cursors = ObservedCursorStore(on_save=lambda _c: saved_when.append(len(sink.events)))
    emitter = make(sink, cursors)
    await emitter.apply(StepBatch(cascade_id=CASCADE, steps=(fixture("user_input"),)))
    assert saved_when == [len(sink.events)] and saved_when[0] > 0


async def test_the_bus_is_told_what_was_delivered_after_the_sink_took_it() -> None:
    sink = RecordingSink()
    emitter = make(sink)
    seen: list[tuple[list[str], int]] = []

    def observe(events: Sequence[Event]) -> None:
        seen.append(([e.id for e in events], len(sink.events)))

    emitter.bus.on_delivered(observe)
    await emitter.emit([notice(1), notice(2)])
    assert seen == [(["n1", "n2"], 2)]


async def test_a_question_gate_gets_its_details_from_a_poll() -> None:
    sink = RecordingSink()
    waiting = fixture("ask_question_waiting")
    polled = fixture("ask_question_waiting")  # the poll projection says: multi-select
    call = polled["metadata"]["toolCall"]
    call["argumentsJson"] = call["argumentsJson"].replace('"is_multi_select":false', '"is_multi_select":true')
    emitter = make(sink, steps=[polled])
    [gate] = [e for e in emitter.conversation.reconciler.feed(waiting) if e.type == "gate_opened"]
    assert [q.multi_select for q in gate.questions] == [False]  # type: ignore[union-attr]
    await emitter.emit([gate])
    [delivered] = sink.events
    assert delivered.id == gate.id
    assert [q.multi_select for q in delivered.questions] == [True]  # type: ignore[union-attr]


async def test_committed_events_reach_the_sink_even_when_the_applier_is_cancelled() -> None:
    sink = RecordingSink()
    sink.fail_next = 3  # the sink is down while the reader is cancelled
    emitter = make(sink)
    held = emitter.clock.held = asyncio.Event()  # type: ignore[attr-defined]
    task = asyncio.ensure_future(emitter.apply(StepBatch(cascade_id=CASCADE, steps=(fixture("user_input"),))))
    await sink.wait_for(lambda: sink.fail_next < 3)
    task.cancel()
    held.set()  # the sink's backoff ends after the reader was cancelled
    await asyncio.wait(emitter.inflight, timeout=60)
    assert [e.type for e in sink.events] == ["status", "model_change", "user_message"]


async def test_a_cancelled_batch_delivers_the_fed_step_and_feeds_no_more() -> None:
    sink = RecordingSink()
    sink.fail_next = 3  # the sink is down while the reader is cancelled
    emitter = make(sink)
    held = emitter.clock.held = asyncio.Event()  # type: ignore[attr-defined]
    steps = (fixture("user_input"), fixture("planner_response_text"))
    task = asyncio.ensure_future(emitter.apply(StepBatch(cascade_id=CASCADE, steps=steps)))
    await sink.wait_for(lambda: sink.fail_next < 3)
    task.cancel()
    held.set()  # the sink's backoff ends after the reader was cancelled
    await asyncio.wait(emitter.inflight, timeout=60)
    assert [e.type for e in sink.events] == ["status", "model_change", "user_message"]
    # the second step was never fed: a later read of it yields its events then
    assert emitter.conversation.reconciler.feed(steps[1])


class HeldSink(RecordingSink):
    """Holds its first delivery until ``release`` is set: a consumer slow to take a step."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.holding = asyncio.Event()

    async def deliver(self, events: Sequence[Event]) -> int:
        if not self.holding.is_set():
            self.holding.set()
            await self.release.wait()
        return await super().deliver(events)


async def test_two_sources_reading_one_conversation_deliver_its_steps_in_order() -> None:
    """The stream delivers step 1 of a batch while a second source (the run-status backstop's read)
    applies the same steps: its batch waits for the stream's, so step 2 is never delivered before a
    step 3 the stream goes on to feed. (It was: the second source fed step 2 and handed it to a
    delivery task; the stream, let go by the sink in the same turn of the loop, fed step 3 and took
    the sink first: seen end to end in tests/store/test_cursor_killed.py's session case, under load.)"""
    sink = HeldSink()
    emitter = make(sink)
    steps = []
    for index, name in ((1, "run_command_done"), (2, "list_directory_done"), (3, "stream_view_file_done")):
        step = fixture(name)
        step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = index
        steps.append(step)
    stream = asyncio.ensure_future(
        emitter.apply(StepBatch(cascade_id=CASCADE, steps=tuple(steps), source="stream"))
    )
    await sink.holding.wait()  # the stream's delivery of step 1 is in the sink
    backstop = asyncio.ensure_future(
        emitter.apply(StepBatch(cascade_id=CASCADE, steps=tuple(steps), snapshot=True, source="backstop"))
    )
    sink.release.set()  # in the same turn of the loop as the backstop's first
    await asyncio.wait_for(asyncio.gather(stream, backstop), 5)
    order = [e.step_key.rsplit("/", 1)[1] for e in sink.events if e.type == "tool_call"]
    assert order == ["1", "2", "3"]


async def test_a_notice_names_the_bound_conversation() -> None:
    sink = RecordingSink()
    emitter = make(sink)
    await emitter.notice("k", "hello", "warning")
    emitter.conversation.rebind("new")
    await emitter.notice("k2", "again")
    assert [(e.id, e.cascade_id, e.level) for e in sink.events] == [  # type: ignore[union-attr]
        ("k/notice", CASCADE, "warning"),
        ("k2/notice", "new", "info"),
    ]


async def test_a_step_of_another_conversation_on_ours_is_routed_not_fed_to_ours() -> None:
    """agy >= 1.1.1 relays sub-agents' updates on the root's stream: a step naming another
    conversation goes to the bus (a sub-agent's mirror takes it), never into our conversation."""
    sink = RecordingSink()
    emitter = make(sink)
    routed: list[tuple[str, Any]] = []

    async def relayed(cascade: str, raw: Any) -> None:
        routed.append((cascade, raw))

    emitter.bus.on_foreign_step(relayed)
    theirs = fixture("planner_response_text")
    theirs["metadata"]["sourceTrajectoryStepInfo"]["cascadeId"] = "child-cascade"
    await emitter.apply(StepBatch(cascade_id=CASCADE, steps=(fixture("user_input"), theirs), source="stream"))
    assert [c for c, _ in routed] == ["child-cascade"]
    assert [e.type for e in sink.events if e.type == "assistant_message"] == []  # not ours
    assert any(e.type == "user_message" and e.cascade_id == CASCADE for e in sink.events)


async def test_the_journal_resumes_the_very_state_the_session_had(tmp_path: Any) -> None:
    """The journal is written from the mapper state's own values (``journal_state``, not a dump per
    delivery): a session that streamed, opened and withdrew gates and committed every recording
    resumes, in another process, the state a whole dump would have saved."""
    import copy

    from agy_harness.adapters.store.cursor_file import FileCursorStore
    from agy_harness.composition.service.journal_state import journal_state
    from tests.core.fixtures import names

    store = FileCursorStore(tmp_path)
    emitter = Emitter(
        Conversation(CASCADE, store),
        snapshot=MemorySnapshot(),
        sink=RecordingSink(),
        options=FAST,
        cursor_store=store,
        clock=FakeClock(),
    )
    st = emitter.conversation.reconciler.state
    frames = []
    done = fixture("stream_planner_text_done")
    done["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 999  # a later reply
    for k in range(1, 4):  # a reply streaming (live text), left open
        frame = copy.deepcopy(done)
        frame["plannerResponse"]["modifiedResponse"] = "lorem ipsum " * k
        frame["status"] = "CORTEX_STEP_STATUS_GENERATING"
        frames.append(frame)
    waiting = fixture("run_command_waiting")  # a gate: live only, not in the cursor (re-fed on resume)
    waiting["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 1000
    for batch in ([fixture(n) for n in names()], frames):
        await emitter.apply(StepBatch(cascade_id=CASCADE, steps=tuple(batch), snapshot=False, source="t"))
        assert journal_state(st) == st.model_dump(mode="json", exclude={"committed"})
    assert st.live and st.status == "running"
    resumed = FileCursorStore(tmp_path).load(CASCADE)
    assert resumed is not None
    assert resumed.state == st.model_dump(mode="json") | {"committed": resumed.state["committed"]}
    assert set(resumed.committed) == st.committed
    await emitter.apply(StepBatch(cascade_id=CASCADE, steps=(waiting,), snapshot=False, source="t"))
    assert st.gates and journal_state(st) == st.model_dump(mode="json", exclude={"committed"})


def test_journal_state_takes_the_fields_as_they_are_only_when_they_dump_to_themselves() -> None:
    """``journal_state`` shares the mapper state's scalar fields instead of dumping them; that holds
    only while every such field is a str, an int or None (checked once from the annotations). A field
    of another kind (a float, a datetime, a nested model) would send it back to ``model_dump``."""
    from datetime import datetime
    from typing import Literal

    from agy_harness.composition.service import journal_state as E

    assert E._PLAIN_FIELDS  # the mapper state as it is: the fast way
    for plain in (str, int, type(None), Literal["a", "b"] | None, Literal[1, 2], str | None):
        assert E._plain(plain), plain
    for other in (float, datetime, dict[str, str], list[str], float | None, Literal[1.5]):
        assert not E._plain(other), other


class HoldingSink(RecordingSink):
    """The ``hold_at``-th delivery (1-based) waits for ``release`` first."""

    def __init__(self, hold_at: int) -> None:
        super().__init__()
        self.calls = 0
        self.hold_at = hold_at
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def deliver(self, events: Sequence[Event]) -> int:
        self.calls += 1
        if self.calls == self.hold_at:
            self.holding.set()
            await self.release.wait()
        return await super().deliver(events)


async def test_a_delivery_that_waits_on_a_later_step_finishes_when_the_reader_is_cancelled() -> None:
    """The first step is delivered; the second one's delivery waits (the sink is slow) and the reader
    is cancelled meanwhile: that step's events still reach the sink, and the third step is not fed
    (it is read again later)."""
    sink = HoldingSink(hold_at=2)
    emitter = make(sink)
    steps = (fixture("user_input"), fixture("planner_response_text"), fixture("run_command_done"))
    reader = asyncio.ensure_future(emitter.apply(StepBatch(cascade_id=CASCADE, steps=steps)))
    await asyncio.wait_for(sink.holding.wait(), 30)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    assert reader.cancelled() and len(emitter.inflight) == 1
    sink.release.set()
    await asyncio.wait(emitter.inflight, timeout=60)
    assert not emitter.inflight and not emitter._stopped
    assert any(e.type == "assistant_message" for e in sink.events)  # the second step's, after the cancel
    # the third step was never fed: a later read of it yields its events
    assert emitter.conversation.reconciler.feed(steps[2])


async def test_a_sinks_own_timeout_ends_only_its_delivery_attempt() -> None:
    """A sink that times out inside a delivery (asyncio.timeout around its own wait) fails that
    attempt only: the delivery is retried and the reader goes on (a delivery moved to another task
    after it began would cancel the reader instead)."""

    class TimingOut(RecordingSink):
        attempts = 0

        async def deliver(self, events: Sequence[Event]) -> int:
            self.attempts += 1
            if self.attempts == 1:
                async with asyncio.timeout(0.01):
                    await asyncio.Event().wait()
            return await super().deliver(events)

    sink = TimingOut()
    emitter = make(sink)
    emitter.clock = LoopClock()  # real time: the sink's timeout and the retry pause
    await asyncio.wait_for(emitter.apply(StepBatch(cascade_id=CASCADE, steps=(fixture("user_input"),))), 60)
    assert sink.attempts == 2 and [e.type for e in sink.events] == ["status", "model_change", "user_message"]


async def test_a_delivery_runs_in_a_copy_of_the_readers_context() -> None:
    """What a sink sets in a context variable stays in its delivery."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="reader")

    class Setter(RecordingSink):
        async def deliver(self, events: Sequence[Event]) -> int:
            var.set("sink")
            return await super().deliver(events)

    emitter = make(Setter())
    await emitter.apply(StepBatch(cascade_id=CASCADE, steps=(fixture("user_input"),)))
    assert var.get() == "reader"


class AtOnceSink(RecordingSink):
    """A sink whose deliver never waits, and says so; it records the task each delivery ran in."""

    delivers_at_once = True

    def __init__(self) -> None:
        super().__init__()
        self.tasks: list[asyncio.Task[Any] | None] = []

    async def deliver(self, events: Sequence[Event]) -> int:
        self.tasks.append(asyncio.current_task())
        return await super().deliver(events)


async def test_a_sink_that_delivers_at_once_is_delivered_to_from_the_readers_task() -> None:
    """No task and no shield per batch for a sink that never waits (QueueSink): its deliveries run in
    the reader's own task, and nothing is left in flight."""
    sink = AtOnceSink()
    emitter = make(sink)
    steps = (fixture("user_input"), fixture("planner_response_text"))
    reader = asyncio.ensure_future(emitter.apply(StepBatch(cascade_id=CASCADE, steps=steps)))
    await reader
    assert [e.type for e in sink.events][:3] == ["status", "model_change", "user_message"]
    assert any(e.type == "assistant_message" for e in sink.events)
    assert len(sink.tasks) == 2 and set(sink.tasks) == {reader}
    assert not emitter.inflight


async def test_a_delivery_at_once_that_must_wait_goes_on_in_its_own_task() -> None:
    """A question gate's details are read (an RPC call, with its own timeout) before it is delivered:
    the delivery hands off to a task of its own first, so that wait and its timeout belong to the
    delivery, not to the reader; the reader cancelled meanwhile, the gate still reaches the sink."""
    reads: list[asyncio.Task[Any] | None] = []
    release = asyncio.Event()

    class SlowSnapshot(MemorySnapshot):
        async def read_steps(self, cascade_id: str) -> list[Any]:
            reads.append(asyncio.current_task())
            async with asyncio.timeout(5.0):  # bound to the task it is entered in
                await release.wait()
            return await super().read_steps(cascade_id)

    sink = AtOnceSink()
    emitter = Emitter(
        Conversation(CASCADE),
        snapshot=SlowSnapshot([fixture("ask_question_waiting")]),
        sink=sink,
        options=FAST,
        clock=FakeClock(),
    )
    steps = (fixture("user_input"), fixture("ask_question_waiting"))
    reader = asyncio.ensure_future(emitter.apply(StepBatch(cascade_id=CASCADE, steps=steps)))
    async with asyncio.timeout(60):
        while not reads:
            await asyncio.sleep(0.001)
    [delivery] = emitter.inflight
    assert reads == [delivery] and sink.tasks == [reader]  # the first step at once, the read in its task
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    assert reader.cancelled()
    release.set()
    await asyncio.wait(emitter.inflight, timeout=60)
    assert [e.type for e in sink.events][-1] == "gate_opened" and sink.tasks[-1] is delivery
