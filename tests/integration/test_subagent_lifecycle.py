"""Sub-agents: linked to the parent's step that names them (while it still runs, where agy names them
then), with the role and type that step gives them; their mirror ends with the child (no reading a
finished child forever), and a child agy lists idle gets its own idle backstop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.service.conversation import Conversation, HarnessOptions
from agy_harness.composition.service.subagents import SubagentMirrors
from agy_harness.core.reconciler import Reconciler
from agy_harness.core.subagents import SubagentSpec
from agy_harness.ports.events import SubagentStarted, ToolResult
from agy_harness.ports.protocols import CascadeSummary
from tests.fakes import MemorySnapshot, RecordingEmitter, RecordingSink

from .helpers import harness_on


@pytest.mark.parametrize(
    ("turn", "step_type"),
    [
        ("start a subagent to review the code", "CORTEX_STEP_TYPE_GENERIC"),  # its result names the child
        ("invoke a subagent to review the code", "CORTEX_STEP_TYPE_INVOKE_SUBAGENT"),  # the typed step
    ],
)
async def test_a_sub_agent_is_linked_to_the_step_that_names_it_with_its_role_and_its_mirror_ends(
    turn: str, step_type: str
) -> None:
    async with Simulator(pace=1.0) as sim:  # the spawning step runs ~0.25 s after the child is listed
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            await session.send(turn)
            await sink.wait_for(lambda: any(isinstance(e, SubagentStarted) for e in sink.events), 20)
            [link] = [e for e in sink.events if isinstance(e, SubagentStarted)]
            spawning = next(s for s in sim.steps() if s["type"] == step_type)
            index = spawning["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"]
            assert link.parent_call_id.endswith(f"/{index}")
            assert (link.role, link.agent_type) == ("Code Reviewer", "research")  # what agy's step says
            child = link.child_cascade_id
            assert not [e for e in sink.events[: sink.events.index(link)] if e.cascade_id == child]
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


def _invoke_step(index: int, *, names: str | None, status: str = "RUNNING") -> dict[str, Any]:
    """The typed INVOKE_SUBAGENT step (only the fields the reference reads), still running."""
    step: dict[str, Any] = {
        "type": "CORTEX_STEP_TYPE_INVOKE_SUBAGENT",
        "status": f"CORTEX_STEP_STATUS_{status}",
        "metadata": {"sourceTrajectoryStepInfo": {"trajectoryId": "t", "stepIndex": index}},
        "invokeSubagent": {"subagents": [{"role": "Auditor", "typeName": "research"}], "results": []},
    }
    if names is not None:
        step["invokeSubagent"]["results"] = [{"conversationId": names}]
    return step


def _mirrors(snapshot: MemorySnapshot, link_wait: float = 5.0) -> SubagentMirrors:
    options = HarnessOptions(subagent_link_wait=link_wait, subagent_poll=0.01)
    return SubagentMirrors(
        Conversation("parent", None),
        snapshot=snapshot,
        emitter=RecordingEmitter(),  # type: ignore[arg-type]
        options=options,
    )


async def test_a_running_step_that_names_the_child_links_it_at_once_with_its_role() -> None:
    steps = MemorySnapshot([_invoke_step(3, names=None), _invoke_step(5, names="kid")])
    mirrors = _mirrors(steps)
    assert await mirrors._spawner("kid") == ("t/5", SubagentSpec("Auditor", "research"))
    assert steps.reads == 1  # named: no waiting


async def test_a_running_step_that_never_names_the_child_is_its_link_after_the_wait() -> None:
    steps = MemorySnapshot([_invoke_step(4, names=None)])
    mirrors = _mirrors(steps, link_wait=0.1)
    assert await mirrors._spawner("kid") == ("t/4", SubagentSpec())  # no role: nothing names it
    assert steps.reads > 1  # it waited for agy to name the child
    steps.steps = [_invoke_step(4, names=None), _invoke_step(6, names="kid", status="DONE")]
    assert await mirrors._spawner("kid") == ("t/6", SubagentSpec("Auditor", "research"))


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
