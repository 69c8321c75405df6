"""The directory watcher on its own, with what it hands each listing to: the run-status backstop, the
sub-agent mirrors (service/subagents.py), the /clear rule (service/clear_follower.py). On a virtual clock."""

from __future__ import annotations

import asyncio
from typing import Any

from agy_harness.composition.service.conversation import Conversation, HarnessOptions
from agy_harness.composition.service.directory_watcher import DirectoryWatcher
from agy_harness.ports.events import ToolResult
from agy_harness.ports.protocols import CascadeSummary
from tests.core.fixtures import CASCADE, fixture
from tests.fakes import FakeClock, ListedDirectory, MemoryClaims, MemorySnapshot, RecordingEmitter

FAST = HarnessOptions(directory_interval=0.001, idle_reports_to_close=2, subagent_poll=0.001)


def summary(cid: str, status: str = "CASCADE_RUN_STATUS_RUNNING", **kw: Any) -> CascadeSummary:
    return CascadeSummary(cascade_id=cid, status=status, **kw)


class Rotations:
    def __init__(self) -> None:
        self.targets: list[str] = []

    async def __call__(self, target: str) -> None:
        self.targets.append(target)


def make(
    listed: list[CascadeSummary],
    steps: list[Any] | None = None,
    conversation: Conversation | None = None,
    claims: MemoryClaims | None = None,
) -> tuple[DirectoryWatcher, ListedDirectory, RecordingEmitter, Rotations]:
    directory, emitter, rotations = ListedDirectory(listed), RecordingEmitter(), Rotations()
    watcher = DirectoryWatcher(
        conversation or Conversation(CASCADE),
        snapshot=MemorySnapshot(steps),
        emitter=emitter,  # type: ignore[arg-type]
        rotate=rotations,
        directory=directory,
        options=FAST,
        clock=FakeClock(),
        claims=claims,
    )
    return watcher, directory, emitter, rotations


async def listings(directory: ListedDirectory, n: int) -> None:
    start = directory.listings
    async with asyncio.timeout(5):
        while directory.listings < start + n:
            await asyncio.sleep(0.001)


def stop(watcher: DirectoryWatcher) -> None:
    for task in watcher.tasks():
        task.cancel()


async def test_agy_idle_while_our_turn_is_open_reads_everything_then_closes_the_turn() -> None:
    conversation = Conversation(CASCADE)
    conversation.reconciler.feed(fixture("user_input"))  # our turn is open
    watcher, _, emitter, _ = make(
        [summary(CASCADE, "CASCADE_RUN_STATUS_IDLE")], [fixture("user_input")], conversation
    )
    watcher.start()
    await emitter.wait_for(lambda: emitter.emitted)
    stop(watcher)
    assert [b.source for b, _ in emitter.applied] == ["backstop"]  # read everything first
    [closed] = emitter.emitted
    assert (closed.type, closed.status) == ("status", "idle")  # type: ignore[union-attr]
    assert conversation.reconciler.state.status == "idle"


async def test_idle_reports_from_an_unreadable_agy_close_nothing() -> None:
    conversation = Conversation(CASCADE)
    conversation.reconciler.feed(fixture("user_input"))
    watcher, directory, emitter, _ = make([summary(CASCADE, "CASCADE_RUN_STATUS_IDLE")], [], conversation)
    watcher.snapshot = MemorySnapshot(down=True)
    watcher.start()
    await listings(directory, 6)  # three backstops tried, none could read agy
    directory.summaries = [summary(CASCADE)]  # and agy says running again
    await listings(directory, 3)
    stop(watcher)
    assert emitter.emitted == [] and conversation.reconciler.state.status == "running"


async def test_a_sub_agent_is_mirrored_once_linked_to_the_call_that_started_it() -> None:
    child = summary("child-1", parent_id=CASCADE)
    other = summary("child-x", parent_id="somebody-else")
    watcher, directory, emitter, rotations = make([summary(CASCADE), child, other], [fixture("user_input")])
    emitter.bus.delivered(
        [
            ToolResult(
                id="r1", cascade_id=CASCADE, call_id="c1", name="invoke_subagent", output="started child-1"
            ),
            ToolResult(id="r2", cascade_id=CASCADE, call_id="c2", name="run_command", output="child-1"),
        ]
    )
    watcher.start()
    await emitter.wait_for(lambda: len(emitter.applied) >= 2)
    await listings(directory, 3)
    stop(watcher)
    [started] = emitter.emitted
    assert (started.child_cascade_id, started.parent_call_id, started.cascade_id) == (  # type: ignore[union-attr]
        "child-1",
        "c1",
        CASCADE,
    )
    assert {(b.source, b.cascade_id, r) for b, r in emitter.applied} == {("subagent", "child-1", "child-1")}
    assert rotations.targets == []  # a sub-agent is no rotation


async def test_a_sub_agent_listed_before_the_result_naming_it_waits_for_that_result() -> None:
    conversation = Conversation(CASCADE)
    conversation.reconciler.feed(fixture("user_input"))  # our turn runs: the result is on its way
    watcher, directory, emitter, _ = make(
        [summary(CASCADE), summary("child-1", parent_id=CASCADE)], [], conversation
    )
    emitter.bus.delivered(  # an earlier sub-agent of this turn: the wrong guess
        [ToolResult(id="r0", cascade_id=CASCADE, call_id="c0", name="invoke_subagent", output="child-0")]
    )
    watcher.start()
    await listings(directory, 3)
    assert emitter.emitted == []  # not linked yet, and nothing of the child emitted before its link
    emitter.bus.delivered(
        [ToolResult(id="r1", cascade_id=CASCADE, call_id="c1", name="invoke_subagent", output="child-1 ok")]
    )
    await emitter.wait_for(lambda: emitter.emitted)
    stop(watcher)
    assert [e.parent_call_id for e in emitter.emitted] == ["c1"]  # type: ignore[union-attr]


async def test_with_no_turn_running_a_sub_agent_is_linked_at_once_to_the_best_guess() -> None:
    watcher, _, emitter, _ = make([summary(CASCADE), summary("child-1", parent_id=CASCADE)], [])
    emitter.bus.delivered(
        [ToolResult(id="r0", cascade_id=CASCADE, call_id="c0", name="invoke_subagent", output="started")]
    )
    watcher.start()
    await emitter.wait_for(lambda: emitter.emitted)
    stop(watcher)
    assert [e.parent_call_id for e in emitter.emitted] == ["c0"]  # type: ignore[union-attr]


async def test_a_conversation_minted_after_binding_is_a_rotation_one_that_existed_is_not() -> None:
    t = "2026-01-01T00:00:0{}Z"
    bound = summary(CASCADE, last_user_input_time=t.format(1))
    older = summary("other", last_user_input_time=t.format(5))  # another conversation, busy meanwhile
    watcher, directory, _, rotations = make([bound, older])
    directory.fail_next = 0
    await watcher.bind()
    watcher.start()
    await listings(directory, 3)
    assert rotations.targets == []
    directory.summaries = [bound, older, summary("cleared", last_user_input_time=t.format(3))]
    await listings(directory, 2)
    stop(watcher)
    assert set(rotations.targets) == {"cleared"}


async def test_when_the_first_listing_fails_the_first_that_works_is_what_existed() -> None:
    t = "2026-01-01T00:00:0{}Z"
    listed = [
        summary(CASCADE, last_user_input_time=t.format(1)),
        summary("other", last_user_input_time=t.format(5)),
    ]
    watcher, directory, _, rotations = make(listed)
    directory.fail_next = 2
    await watcher.bind()
    watcher.start()
    await listings(directory, 4)
    stop(watcher)
    assert rotations.targets == []


async def test_after_leaving_a_conversation_it_never_rotates_back_and_its_mirrors_stop() -> None:
    t = "2026-01-01T00:00:0{}Z"
    conversation = Conversation(CASCADE)
    watcher, directory, _, rotations = make(
        [summary(CASCADE, last_user_input_time=t.format(1)), summary("kid", parent_id=CASCADE)],
        conversation=conversation,
    )
    await watcher.bind()
    watcher.start()
    await listings(directory, 2)
    mirrors = watcher.tasks()[1:]
    assert len(mirrors) == 1
    watcher.left(CASCADE)
    conversation.rebind("new")
    directory.summaries = [
        summary("new", last_user_input_time=t.format(2)),
        summary(CASCADE, last_user_input_time=t.format(9)),
    ]
    await listings(directory, 3)
    stop(watcher)
    await asyncio.wait(mirrors, timeout=60)
    assert rotations.targets == [] and mirrors[0].cancelled()


# -- cost while nothing can change (issue #14) ---------------------------------------------------


class TickLog:
    """Stands in for DirectoryWatcher._tick: records the interval asked for, never sleeps."""

    def __init__(self, watcher: DirectoryWatcher, wake_after: int = -1) -> None:
        self.asked: list[float] = []
        self.watcher = watcher
        self.wake_after = wake_after

    async def __call__(self, interval: float, *, wakeable: bool = True) -> bool:
        self.asked.append(interval)
        await asyncio.sleep(0)
        return not wakeable or len(self.asked) != self.wake_after  # False: woken by a delivery


async def run_ticks(watcher: DirectoryWatcher, ticks: TickLog, n: int) -> list[float]:
    watcher._tick = ticks  # type: ignore[method-assign]
    watcher.start()
    try:
        async with asyncio.timeout(5):
            while len(ticks.asked) < n:
                await asyncio.sleep(0)
    finally:
        stop(watcher)
    return [round(a / FAST.directory_interval, 6) for a in ticks.asked[:n]]


async def test_a_quiet_conversation_is_checked_less_and_less_often_down_to_the_cap() -> None:
    watcher, directory, _, _ = make([summary(CASCADE, "CASCADE_RUN_STATUS_IDLE")])
    steps = await run_ticks(watcher, TickLog(watcher), 6)
    assert steps == [1, 2, 3, 3, 3, 3]  # in base intervals; the cap is directory_idle_factor
    assert directory.listings >= 5


async def test_a_running_turn_keeps_the_short_interval() -> None:
    conversation = Conversation(CASCADE)
    conversation.reconciler.feed(fixture("user_input"))  # our turn is open
    watcher, _, _, _ = make([summary(CASCADE)], conversation=conversation)
    assert await run_ticks(watcher, TickLog(watcher), 5) == [1, 1, 1, 1, 1]


async def test_a_delivery_wakes_it_back_to_the_short_interval() -> None:
    watcher, _, _, _ = make([summary(CASCADE, "CASCADE_RUN_STATUS_IDLE")])
    # the 4th wait is cut short (events were delivered): a check one short tick later; still quiet
    # after it (nothing started), so the back-off starts over
    steps = await run_ticks(watcher, TickLog(watcher, wake_after=4), 7)
    assert steps == [1, 2, 3, 3, 1, 2, 3]


async def test_deliveries_of_our_cascade_wake_it() -> None:
    watcher, _, emitter, _ = make([])
    other = ToolResult(id="x/1/r", cascade_id="someone-else", call_id="c", name="n", output="")
    emitter.bus.delivered([other])
    assert not watcher._wake.is_set()
    ours = ToolResult(id="x/2/r", cascade_id=CASCADE, call_id="c", name="n", output="")
    emitter.bus.delivered([ours])
    assert watcher._wake.is_set()


async def test_claims_are_read_only_when_a_conversation_could_be_our_clear() -> None:
    """Reading the claims means reading a file per session on the machine (1,500 here took 130 ms on
    the loop, every check); with nothing new listed there is nothing they could exclude."""
    claims = MemoryClaims()
    watcher, directory, _, _ = make([summary(CASCADE, "CASCADE_RUN_STATUS_IDLE")], claims=claims)
    watcher.start()
    try:
        await listings(directory, 5)
    finally:
        stop(watcher)
    assert claims.reads == 0


async def test_a_conversation_another_session_claimed_is_no_clear_and_unsafe_claims_follow_none() -> None:
    """The Claims port (a memory one here: no file is written): a new conversation another session of
    this library claimed is never our /clear; claims that cannot be read safely follow none, said
    once in a notice; once they can be read, the one fresh unclaimed conversation is followed."""
    t = "2026-01-01T00:00:0{}Z"
    bound = summary(CASCADE, last_user_input_time=t.format(1))
    world: dict[str, str] = {}
    MemoryClaims(world).claim("theirs")  # another session's
    claims = MemoryClaims(world)
    watcher, directory, emitter, rotations = make([bound], claims=claims)
    await watcher.bind()
    watcher.start()
    try:
        directory.summaries = [bound, summary("theirs", last_user_input_time=t.format(3))]
        await listings(directory, 3)
        assert rotations.targets == []
        claims.unsafe = "writable by other users"
        directory.summaries.append(summary("mine", last_user_input_time=t.format(4)))
        await listings(directory, 3)
        assert rotations.targets == []
        claims.unsafe = ""
        await listings(directory, 2)
    finally:
        stop(watcher)
    unsafe = [text for _, text, _ in emitter.notices if "claims cannot be read safely" in text]
    assert len(unsafe) == 1 and "writable by other users" in unsafe[0]
    assert set(rotations.targets) == {"mine"}


async def test_a_busy_stream_lists_agys_conversations_once_a_tick() -> None:
    """While the stream delivers step after step, the directory is checked at the next tick after a
    delivery (every ``directory_interval``), not after every delivery: the short tick used to be cut
    short by the next delivery, so a stream delivering every 10 ms listed agy's conversations about
    a hundred times a second (each a GetAllCascadeTrajectories: most of the CPU of a steady stream)."""
    from agy_harness.adapters.simulator import Simulator
    from agy_harness.adapters.sinks.queue import QueueSink
    from agy_harness.composition.root.session import open_session

    async with Simulator(profile="1.0.10", pace=0) as sim:
        c = sim._cascade(sim.cascade_id)
        listed = 0
        summaries = sim.trajectory_summaries

        def counted() -> dict[str, dict[str, Any]]:
            nonlocal listed
            listed += 1
            return summaries()

        sim.trajectory_summaries = counted  # type: ignore[method-assign]
        sink = QueueSink()
        async with open_session(base_url=sim.base_url, cascade_id=sim.cascade_id, sink=sink):

            async def turn() -> None:  # agy at work, a step every 10 ms for 1.5 s
                for _ in range(150):
                    step = fixture("stream_run_command_done")
                    step["metadata"]["sourceTrajectoryStepInfo"].update(
                        trajectoryId=c.trajectory_id, cascadeId=c.id, stepIndex=len(c.steps)
                    )
                    sim._append(c, step)
                    await asyncio.sleep(0.01)

            await asyncio.sleep(0.2)
            before = listed
            c.worker = asyncio.create_task(turn())
            await c.worker
            c.worker = None
            during = listed - before
            delivered = 0
            while not sink.queue.empty():
                delivered += sink.queue.get_nowait().type == "tool_result"
        assert delivered == 150
        assert 1 <= during <= 4, during  # 1.5 s at one listing a second (1.0 s default)


class TurnOverWhileListing(ListedDirectory):
    """Answers IDLE; while its ``at``-th listing is in flight, our turn ends and the next begins (both
    without a turn id: ``state.turn`` stays ''), and from then on it answers RUNNING (the new turn)."""

    def __init__(self, conversation: Conversation, at: int) -> None:
        super().__init__([summary(CASCADE, "CASCADE_RUN_STATUS_IDLE")])
        self.conversation, self.at = conversation, at

    async def list_cascades(self) -> list[CascadeSummary]:
        answer = await super().list_cascades()
        if self.listings == self.at:
            state = vars(self.conversation.reconciler.state)
            state["status"] = "idle"  # the first turn ended ...
            state["status"] = "running"  # ... and a second began, before this (stale) answer came back
            self.summaries = [summary(CASCADE)]
        return answer


async def test_a_listing_from_a_turn_without_an_id_never_counts_for_the_next_one() -> None:
    conversation = Conversation(CASCADE)
    vars(conversation.reconciler.state)["status"] = "running"  # a turn whose USER_INPUT was never seen
    assert conversation.reconciler.state.turn == ""
    watcher, _, emitter, _ = make([], [], conversation)
    directory = watcher.directory = TurnOverWhileListing(conversation, at=2)
    watcher.start()
    await listings(directory, 6)
    stop(watcher)
    assert emitter.applied == [] and emitter.emitted == []  # no backstop: the second turn was never closed
    assert conversation.reconciler.state.status == "running"
