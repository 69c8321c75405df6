"""An answer approves exactly the request the human saw, and nothing else (issue #26, cases 2-4),
through the public API on the simulator. ``sim.executed`` is what agy ran (command, cwd).

* case 2: a late allow is never re-targeted to a request in another directory or turn; agy's own
  timeout re-ask of the identical request (same turn) still gets it;
* case 3: a gate that closed (denied in agy's terminal, already answered) refuses later answers: no
  double delivery, no approval of the next turn's identical command;
* case 4: a waiting request that changes under its card is a new gate (new id); the old answer is
  refused, never delivered to what the request became.
"""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import rewrite_waiting
from agy_harness.ports.events import GateOpened, GateWithdrawn

from .helpers import waiting, watched

SANDBOX = "/home/agy/build-sandbox"
ELSEWHERE = "agy is now asking something else"


@pytest.fixture
async def timing_out() -> Simulator:
    """Gates time out after 0.5 s and are not re-asked: the turn gives up."""
    async with Simulator(profile="1.0.10", gate_timeout=0.5, gate_reasks=0, pace=0.02) as sim:
        yield sim


@pytest.fixture
async def re_asking() -> Simulator:
    """Gates time out after 0.5 s and agy re-asks the same request (a new step) up to 3 times."""
    async with Simulator(profile="1.0.10", gate_timeout=0.5, gate_reasks=3, pace=0.02) as sim:
        yield sim


# -- case 2: re-targeting ------------------------------------------------------------------------


async def test_a_late_allow_never_runs_the_command_in_another_directory_or_turn(
    timing_out: Simulator,
) -> None:
    sim = timing_out
    async with watched(sim) as w:
        await w.session.send(f"run `rm -rf *` in {SANDBOX}")
        first = await w.gate("rm -rf *")
        assert first.permission is not None and first.permission.cwd == SANDBOX
        await w.withdrawn(first.gate_id)  # timed out: the turn gave up
        mark = len(w.events)
        await w.session.send("run `rm -rf *`")  # the next turn: the same command, in the workspace
        second = await w.gate("rm -rf *", after=mark)
        assert second.permission is not None and second.permission.cwd == sim.workspace
        with pytest.raises(RuntimeError, match="could not be answered"):
            await w.session.answer(first.gate_id, True)  # the human's late answer to the first card
        assert sim.executed == []
        assert waiting(sim, second.step_index)  # still waits for its own answer
        await w.notice(ELSEWHERE, "error")


async def test_agys_timeout_re_ask_of_the_identical_request_still_gets_the_answer(
    re_asking: Simulator,
) -> None:
    sim = re_asking
    async with watched(sim) as w:
        await w.session.send(f"run `rm -rf build` in {SANDBOX}")
        first = await w.gate("rm -rf build")
        await w.withdrawn(first.gate_id)  # timed out; agy asks again at a higher step
        again = await w.gate("rm -rf build", after=w.events.index(first) + 1)
        assert again.step_index > first.step_index and again.gate_id != first.gate_id
        await w.session.answer(first.gate_id, True)
        # the re-ask took that answer: its own card is no longer asked, and takes no second answer
        assert w.session.sink.pending_gate(again.gate_id) is None  # type: ignore[attr-defined]
        with pytest.raises(RuntimeError, match="could not be answered"):
            await w.session.answer(again.gate_id, False)
        await w.idle(after=w.events.index(again))
    assert sim.executed == [("rm -rf build", SANDBOX)]


async def test_a_re_ask_that_asks_something_else_is_refused(re_asking: Simulator) -> None:
    sim = re_asking
    async with watched(sim) as w:
        await w.session.send(f"run `rm -rf build` in {SANDBOX}")
        first = await w.gate("rm -rf build")
        await w.withdrawn(first.gate_id)
        again = await w.gate("rm -rf build", after=w.events.index(first) + 1)
        rewrite_waiting(sim, again.step_index, "rm -rf build", cwd="/home/agy")  # same words, elsewhere
        with pytest.raises(RuntimeError, match="could not be answered"):
            await w.session.answer(first.gate_id, True)
        assert sim.executed == []
        await w.notice(ELSEWHERE, "error")


# -- case 3: closed gates ------------------------------------------------------------------------


async def test_an_answer_to_a_gate_denied_in_agy_never_approves_the_next_turns_command(
    sim: Simulator,
) -> None:
    async with watched(sim) as w:
        await w.session.send("run `rm -rf build`")
        first = await w.gate("rm -rf build")
        # the human denies it in agy's own terminal
        await sim.handle_interaction(
            sim.cascade_id,
            {
                "trajectoryId": first.trajectory_id,
                "stepIndex": first.step_index,
                "permission": {"allow": False},
            },
        )
        await w.withdrawn(first.gate_id)
        await w.idle(after=w.events.index(first))
        mark = len(w.events)
        await w.session.send("run `rm -rf build`")  # the next turn asks the identical thing
        second = await w.gate("rm -rf build", after=mark)
        with pytest.raises(RuntimeError, match="could not be answered"):
            await w.session.answer(first.gate_id, True)  # late: another front end, a retry
        assert sim.executed == []
        assert waiting(sim, second.step_index)


async def test_a_double_answer_is_delivered_once(sim: Simulator) -> None:
    async with watched(sim) as w:
        await w.session.send("run `rm -rf build`")
        first = await w.gate("rm -rf build")
        results = await asyncio.gather(
            w.session.answer(first.gate_id, True),
            w.session.answer(first.gate_id, True),
            return_exceptions=True,
        )
        assert sum(r is None for r in results) == 1, results  # one delivered, the other refused
        await w.idle(after=w.events.index(first))
        mark = len(w.events)
        await w.session.send("run `rm -rf build`")
        second = await w.gate("rm -rf build", after=mark)
        with pytest.raises(RuntimeError, match="could not be answered"):
            await w.session.answer(first.gate_id, True)  # a retry of an answer agy already took
        assert sim.executed == [("rm -rf build", sim.workspace)]  # ran once
        assert waiting(sim, second.step_index)


# -- case 4: a request that changes under its card -----------------------------------------------


async def test_a_request_that_changes_under_its_card_is_a_new_gate(sim: Simulator) -> None:
    async with watched(sim) as w:
        await w.session.send("run `ls build`")
        first = await w.gate("ls build")
        rewrite_waiting(sim, first.step_index, "rm -rf ~/work")  # the same step now asks this
        withdrawn = await w.withdrawn(first.gate_id)
        changed = await w.gate("rm -rf ~/work")
        assert changed.step_index == first.step_index and changed.gate_id != first.gate_id
        assert w.events.index(withdrawn) < w.events.index(changed)
        with pytest.raises(RuntimeError, match="could not be answered"):
            await w.session.answer(first.gate_id, True)  # the allow given for `ls build`
        assert sim.executed == []
        assert waiting(sim, first.step_index)
        await w.session.answer(changed.gate_id, False)  # its own card is answered normally
        await w.idle(after=w.events.index(changed))
    assert sim.executed == []


async def test_a_changed_request_withdraws_the_card_put_to_the_human(sim: Simulator) -> None:
    """The default sink's pending ask for the old request ends; the new one is asked."""
    async with watched(sim) as w:
        await w.session.send("run `ls build`")
        first = await w.gate("ls build")
        sink = w.session.sink
        await asyncio.sleep(0.2)
        assert sink.pending_gate(first.gate_id) is not None  # type: ignore[attr-defined]
        rewrite_waiting(sim, first.step_index, "rm -rf ~/work")
        changed = await w.gate("rm -rf ~/work")
        async with asyncio.timeout(5):
            while sink.pending_gate(changed.gate_id) is None:  # type: ignore[attr-defined]
                await asyncio.sleep(0.01)
        assert sink.pending_gate(first.gate_id) is None  # type: ignore[attr-defined]
        assert isinstance(changed, GateOpened) and not isinstance(changed, GateWithdrawn)


# -- what agy offers, offered ----------------------------------------------------------------------


async def test_deny_and_tell_agy_why(sim: Simulator) -> None:
    async with watched(sim) as w:
        await w.session.send("run `rm -rf build`")
        gate = await w.gate("rm -rf build")
        await w.session.answer(gate.gate_id, "no: use make clean instead")
        await w.idle(after=w.events.index(gate))
        step = sim.steps()[gate.step_index]
        response = step["completedInteractions"][-1]["response"]["permission"]
        assert response == {"userDenyInstruction": "use make clean instead"}  # a denial, with why
        replies = [e.text for e in w.events if e.type == "assistant_message"]  # type: ignore[union-attr]
        assert "you said: use make clean instead" in replies[-1]
    assert sim.executed == []
