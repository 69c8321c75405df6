"""Turn end by agy's own word (issue 34): ``status == IDLE && fullyIdle`` where agy sends fullyIdle
(AgentStateUpdate.fully_idle=18), the current rule where it does not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcStreamSource
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.service.conversation import Conversation
from agy_harness.composition.service.read_driver import ReadDriver
from agy_harness.core.turns import RunStatus
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import StepBatch
from tests.core.fixtures import CASCADE, fixture
from tests.fakes import FakeClock, MemorySnapshot, RecordingEmitter

IDLE, RUNNING = "CASCADE_RUN_STATUS_IDLE", "CASCADE_RUN_STATUS_RUNNING"


def test_the_run_is_over_only_when_idle_and_fully_idle_where_agy_sends_it() -> None:
    old = RunStatus()  # an agy that never sends fullyIdle: the stream's IDLE alone decides nothing
    assert [old.read(u) for u in ({"status": RUNNING}, {"status": IDLE}, {})] == [False, None, None]
    assert not old.running
    new = RunStatus()
    assert new.read({"status": RUNNING}) is False and new.running
    assert new.read({"status": IDLE, "fullyIdle": True}) is True and not new.running
    assert new.sends_fully_idle
    # proto-JSON leaves a false fullyIdle out: once agy sent the field, IDLE without it is not over
    assert new.read({"status": IDLE}) is False and new.running
    assert new.read({"status": IDLE, "fullyIdle": False}) is False
    assert new.read({"status": IDLE, "fullyIdle": True}) is True


class Frames:
    name, live = "stream", True

    def __init__(self, batches: list[StepBatch]) -> None:
        self.items = batches

    async def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        for batch in self.items:
            yield batch
        await asyncio.Event().wait()


async def drive(run_idle: bool | None) -> RecordingEmitter:
    conversation = Conversation(CASCADE)
    emitter = RecordingEmitter(feeds=False)
    emitter.snapshot = MemorySnapshot([fixture("user_input")])  # type: ignore[attr-defined]
    conversation.reconciler.feed(fixture("user_input"))  # a turn is open
    source = Frames([StepBatch(cascade_id=CASCADE, steps=(), source="stream", run_idle=run_idle)])
    driver = ReadDriver(conversation, [source], emitter, clock=FakeClock())  # type: ignore[arg-type, list-item]
    driver.start()
    try:
        await emitter.wait_for(lambda: len(emitter.applied) >= (2 if run_idle else 1))
        await asyncio.sleep(0.05)
    finally:
        assert driver.task is not None
        driver.task.cancel()
        await asyncio.gather(driver.task, return_exceptions=True)
    return emitter


async def test_agys_fully_idle_closes_the_open_turn_after_reading_everything() -> None:
    emitter = await drive(True)
    assert [b.source for b, _ in emitter.applied] == ["stream", "run-idle"]  # read everything first
    [closed] = emitter.emitted
    assert (closed.type, closed.status) == ("status", "idle")  # type: ignore[union-attr]
    assert "fully idle" in closed.reason  # type: ignore[union-attr]


async def test_without_agys_word_the_stream_closes_nothing() -> None:
    for said in (None, False):
        emitter = await drive(said)
        assert emitter.emitted == [] and [b.source for b, _ in emitter.applied] == ["stream"]


async def read_run(sim: Simulator, source: RpcStreamSource) -> bool | None:
    """The first frame's word on the run (the conversation is idle)."""
    async with asyncio.timeout(15):
        async for batch in source.batches(sim.cascade_id):
            return batch.run_idle
    raise AssertionError("no frame")


async def test_the_simulators_stream_carries_fully_idle_when_asked(sim: Simulator) -> None:
    await sim.submit_user_turn("Say hello in one short sentence.")
    await sim.wait_idle(10)
    async with RpcClient(sim.base_url) as client:
        source = RpcStreamSource(client, idle_timeout=5)
        assert await read_run(sim, source) is None  # the recorded agy: no fullyIdle, the stream does not say
        sim.sends_fully_idle = True
        assert await read_run(sim, source) is True and source.run.sends_fully_idle
        sim.background_work = True  # IDLE but not fully idle: agy still works, the run is not over
        assert await read_run(sim, source) is False and source.run.running


class Feeding(RecordingEmitter):
    """The emitter as the harness has it: every applied batch goes through the conversation's real
    reconciler, whose events (a gate opening...) reach the human."""

    def __init__(self, conversation: Conversation) -> None:
        super().__init__()
        self.conversation = conversation

    async def apply(self, batch: StepBatch, reconciler: object = None) -> None:
        self.applied.append((batch, None))
        for raw in batch.steps:
            self.emitted.extend(self.conversation.reconciler.feed(raw))
        await asyncio.sleep(0)


async def test_a_stale_fully_idle_never_closes_a_turn_whose_step_waits() -> None:
    """The stream says IDLE + fullyIdle (stale: it lags behind agy) while the steps agy has hold a
    WAITING step: the turn stays open (the rule the run-status backstop obeys, core.turns.turn_goes_on)
    and the gate still reaches the human. Before the shared rule, the stream's word closed the turn."""
    waiting = fixture("run_command_waiting")
    conversation, emitter = await _a_stale_idle_over([fixture("user_input"), waiting])
    assert [b.source for b, _ in emitter.applied] == ["stream", "run-idle"]  # everything was read
    gates = [e for e in emitter.emitted if isinstance(e, GateOpened)]
    assert len(gates) == 1 and gates[0].kind == "permission"  # the gate reaches the human
    assert not any(getattr(e, "type", "") == "status" and getattr(e, "status", "") == "idle" for e in emitter.emitted)
    assert conversation.reconciler.state.status == "running" and conversation.reconciler.state.gates


def test_the_one_rule_for_every_idle_signal() -> None:
    from agy_harness.core.mapper_state import MapperState
    from agy_harness.core.turns import turn_goes_on

    state = MapperState()
    assert turn_goes_on(state, []) == ""
    assert turn_goes_on(state, [fixture("run_command_waiting")]) == "a step is WAITING"
    assert turn_goes_on(state, [{"status": "CORTEX_STEP_STATUS_RUNNING"}, "junk", None]) == "a step is RUNNING"
    assert turn_goes_on(state, [fixture("run_command_done"), fixture("user_input")]) == ""
    state.gates["t/3"] = "gate"
    assert turn_goes_on(state, []) == "a gate is open"


async def test_a_stale_fully_idle_never_closes_a_turn_whose_step_is_still_pending() -> None:
    """agy creates a tool step PENDING before it asks (the recorded run_command's transitions:
    PENDING, then WAITING): a stale IDLE + fullyIdle read while a step is PENDING (or any status that
    is not settled) keeps the turn open."""
    import copy

    pending = copy.deepcopy(fixture("run_command_waiting"))
    pending["status"] = "CORTEX_STEP_STATUS_PENDING"
    pending.pop("requestedInteraction", None)
    conversation, emitter = await _a_stale_idle_over([fixture("user_input"), pending])
    assert not any(getattr(e, "type", "") == "status" and getattr(e, "status", "") == "idle" for e in emitter.emitted)
    assert conversation.reconciler.state.status == "running"


async def _a_stale_idle_over(steps: list[Any]) -> tuple[Conversation, Feeding]:
    """A turn open (its user input fed), agy's snapshot holding ``steps``, and a stream batch saying
    IDLE + fullyIdle (``run_idle``): the read driver runs until it read both, then stops."""
    conversation = Conversation(CASCADE)
    emitter = Feeding(conversation)
    emitter.snapshot = MemorySnapshot(steps)  # type: ignore[attr-defined]
    conversation.reconciler.feed(fixture("user_input"))  # a turn is open
    assert conversation.reconciler.state.status == "running"
    source = Frames([StepBatch(cascade_id=CASCADE, steps=(), source="stream", run_idle=True)])
    driver = ReadDriver(conversation, [source], emitter, clock=FakeClock())  # type: ignore[arg-type, list-item]
    driver.start()
    try:
        await emitter.wait_for(lambda: len(emitter.applied) >= 2)
        await asyncio.sleep(0.05)  # (room for a wrong close: nothing else is to come)
    finally:
        assert driver.task is not None
        driver.task.cancel()
        await asyncio.gather(driver.task, return_exceptions=True)
    return conversation, emitter


def test_steps_of_an_earlier_turn_before_the_user_input_do_not_hold_the_open_turn() -> None:
    """#35 case 8: a WAITING gate of another executionId before the open turn's user input (a bogus
    flood that sat there when the turn began) no longer holds the turn; after the user input, or
    without the user input read, or without an executionId, it still does."""
    from agy_harness.core.mapper_state import MapperState
    from agy_harness.core.turns import turn_goes_on

    user = fixture("user_input")
    ours = user["metadata"]["executionId"]
    other = fixture("run_command_waiting")
    assert other["metadata"]["executionId"] != ours
    info = other["metadata"]["sourceTrajectoryStepInfo"]
    key = f"{info['trajectoryId']}/{info['stepIndex']}"  # the gate open on ``other``
    state = MapperState(turn=f"traj/u:{ours}", gates={key: "g6"})
    assert turn_goes_on(state, [other, user]) == ""  # before the turn, another turn's: set apart
    assert turn_goes_on(state, [user, other]) == "a step is WAITING"  # after it: holds
    assert turn_goes_on(state, [other]) == "a step is WAITING"  # the turn's input not read: holds
    blank = {**other, "metadata": {**other["metadata"], "executionId": ""}}
    assert turn_goes_on(state, [blank, user]) == "a step is WAITING"  # no id: holds
    two = MapperState(turn=f"traj/u:{ours}", gates={key: "g6", "traj/9": "g9"})
    assert turn_goes_on(two, [other, user]) == "a gate is open"  # a gate nothing accounts for
    # a WAITING step of another turn with no gate of its own does not excuse the open turn's gate
    bare = {**other, "metadata": {**other["metadata"], "sourceTrajectoryStepInfo": {**info, "stepIndex": 4}}}
    ours_open = MapperState(turn=f"traj/u:{ours}", gates={"traj/9": "g9"})
    assert turn_goes_on(ours_open, [bare, user]) == "a gate is open"
