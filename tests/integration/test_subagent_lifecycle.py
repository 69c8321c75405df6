"""Sub-agents: linked to the spawning step while it still runs, their mirror ends with the child (no
reading a finished child forever), and a child agy lists idle gets its own idle backstop."""

from __future__ import annotations

import asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.service.conversation import Conversation
from agy_harness.composition.service.subagents import SubagentMirrors
from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import SubagentStarted, ToolResult
from agy_harness.ports.protocols import CascadeSummary
from tests.fakes import MemorySnapshot, RecordingEmitter, RecordingSink

from .helpers import harness_on


async def test_a_sub_agent_is_linked_while_its_spawning_step_runs_and_its_mirror_ends() -> None:
    async with Simulator(pace=1.0) as sim:  # the spawning step runs ~0.25 s after the child is listed
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            await session.send("start a subagent to review the code")
            await sink.wait_for(lambda: any(isinstance(e, SubagentStarted) for e in sink.events), 20)
            [link] = [e for e in sink.events if isinstance(e, SubagentStarted)]
            at = sink.events.index(link)
            results = [e for e in sink.events[:at] if isinstance(e, ToolResult) and "subagent" in e.name]
            assert results == []  # linked before the spawning step finished
            steps = sim.steps()
            spawning = next(s for s in steps if s["type"] == "CORTEX_STEP_TYPE_GENERIC")
            index = spawning["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"]
            assert link.parent_call_id.endswith(f"/{index}")
            child = link.child_cascade_id
            await sink.wait_for(
                lambda: any(
                    isinstance(e, ToolResult) and e.call_id == link.parent_call_id for e in sink.events
                ),
                20,
            )
            await sim.wait_idle(timeout=30)
            watcher = session.harness.watcher
            await sink.wait_for(lambda: watcher.subagents.children[child].done(), 20)  # the mirror ended
            closing = [e for e in sink.events if e.cascade_id == child and e.type == "status"]
            assert closing and closing[-1].status == "idle"  # type: ignore[union-attr]
            assert [e for e in sink.events if isinstance(e, SubagentStarted)] == [link]  # linked once


async def test_a_quiet_child_agy_lists_idle_gets_its_own_backstop() -> None:
    emitter = RecordingEmitter(feeds=True)
    mirrors = SubagentMirrors(Conversation("parent", None), snapshot=MemorySnapshot(), emitter=emitter)  # type: ignore[arg-type]
    child = Reconciler("child")
    child.state.status = "running"  # its turn opened; agy never sent a closing planner
    mirrors.reconcilers["child"] = child
    task = asyncio.create_task(asyncio.sleep(60))
    idle = CascadeSummary(
        cascade_id="child", parent_id="parent", status="CASCADE_RUN_STATUS_IDLE", step_count=3
    )
    mirrors.children["child"] = task  # its mirror runs
    await mirrors.follow([idle])
    assert not task.cancelled() and emitter.emitted == []  # one report is not enough
    await mirrors.follow([idle])
    await asyncio.sleep(0)
    assert task.cancelled()
    assert [(e.type, e.cascade_id, e.status) for e in emitter.emitted] == [("status", "child", "idle")]  # type: ignore[attr-defined]


async def test_a_relayed_sub_agent_step_goes_to_its_mirror_and_nowhere_else() -> None:
    from tests.core.fixtures import fixture

    emitter = RecordingEmitter(feeds=True)
    mirrors = SubagentMirrors(Conversation("parent", None), snapshot=MemorySnapshot(), emitter=emitter)  # type: ignore[arg-type]
    step = fixture("user_input")
    step["metadata"]["sourceTrajectoryStepInfo"]["cascadeId"] = "child"
    await emitter.bus.foreign_step("child", step)  # not mirrored (yet): not ours, dropped
    assert emitter.emitted == []
    mirrors.reconcilers["child"] = Reconciler("child")
    await emitter.bus.foreign_step("child", step)
    assert {e.cascade_id for e in emitter.emitted} == {"child"}
    assert [e.type for e in emitter.emitted if e.type == "user_message"] == ["user_message"]
