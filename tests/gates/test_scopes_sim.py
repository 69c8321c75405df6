"""Session.answer with a scope or an edited command, on the simulator over real RPC: what agy
received (the simulator's record) is exactly what the human chose, and agy honours it (a lasting
grant lets the same request run without asking; an edited command is what runs)."""

from __future__ import annotations

from agy_harness.adapters.simulator import Simulator
from agy_harness.ports.protocols import GateAnswer

from .helpers import Watch, session_on


async def test_allow_for_this_conversation_reaches_agy_and_the_same_command_runs_without_asking(
    sim: Simulator,
) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("run: ls -la")
        assert gate.scopes == ("once", "conversation", "global")
        await session.answer(gate.gate_id, "allow conversation")
        await watch.turn_over()
        [(cascade, sent)] = sim.received
        assert cascade == sim.cascade_id
        assert sent["permission"] == {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"}
        step = sim.steps()[gate.step_index]
        assert step["completedInteractions"][-1]["response"]["permission"] == sent["permission"]
        await session.send("run: ls src")  # the same request (agy's pattern: ls) in this conversation
        await watch.turn_over()
        assert len(watch.gates) == 1 and len(sim.received) == 1  # not asked again
        assert [c for c, _ in sim.executed] == ["ls -la", "ls src"]


async def test_a_conversation_grant_does_not_cover_another_conversation_and_a_global_one_does(
    sim: Simulator,
) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("run: pwd")
        await session.answer(gate.gate_id, GateAnswer(allow=True, scope="global"))
        await watch.turn_over()
        assert sim.received[-1][1]["permission"] == {"allow": True, "scope": "PERMISSION_SCOPE_GLOBAL"}
    other = await sim.start_cascade()
    await sim.submit_user_turn("run: pwd", cascade_id=other)
    await sim.wait_idle(10)
    assert not sim.is_running(other) and sim.executed[-1][0] == "pwd"  # ran without a gate
    grants = sim.grants.kept
    assert [(g.scope, g.action, g.pattern) for g in grants] == [("global", "command", "pwd")]
    sim.grants.kept[:] = [type(grants[0])("conversation", sim.cascade_id, "command", "pwd")]
    third = await sim.start_cascade()
    await sim.submit_user_turn("run: pwd", cascade_id=third)
    await sim.wait_idle(10)
    assert sim.is_running(third)  # parked on its gate: a conversation grant covers only its own


async def test_an_edited_command_is_what_agy_runs(sim: Simulator) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("kind: runCommand rm -rf build")
        assert gate.interaction == "runCommand" and gate.editable and gate.scopes == ("once",)
        await session.answer(gate.gate_id, GateAnswer(allow=True, edited_command="rm -rf build/tmp"))
        await watch.turn_over()
    assert sim.received[-1][1]["runCommand"] == {
        "confirm": True,
        "proposedCommandLine": "rm -rf build",
        "submittedCommandLine": "rm -rf build/tmp",
    }
    assert sim.executed == [("rm -rf build/tmp", sim.workspace)]
