"""A question answered with empty ``responses`` is skipped, as agy does (the reference harness's
decline: omnigent 0.19.1 server/routes/_antigravity_elicitation.py, "the RPC askQuestion skip")."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator import Simulator

from .helpers import call, client, interaction, ok, waiting_index


@pytest.mark.parametrize("ask", [{"responses": []}, {}], ids=["empty", "omitted (proto-JSON default)"])
async def test_empty_responses_skip_the_question(sim: Simulator, ask: dict) -> None:
    await sim.submit_user_turn("ask: which part should we work on first?")
    await sim.wait_idle()
    i = waiting_index(sim)
    async with client() as c:
        await ok(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, askQuestion=ask))
    await sim.wait_idle()
    done = sim.steps()[i]
    assert done["status"] == "CORTEX_STEP_STATUS_DONE"
    assert "selectedOptionIds" not in done["askQuestion"]["questions"][0]
    assert done["completedInteractions"][0]["response"]["askQuestion"] == {}
    planners = [s for s in sim.steps() if "response" in s.get("plannerResponse", {})]
    assert "skipped" in planners[-1]["plannerResponse"]["response"]
    assert not sim.is_running()


async def test_a_malformed_question_answer_is_still_refused(sim: Simulator) -> None:
    await sim.submit_user_turn("ask: which part should we work on first?")
    await sim.wait_idle()
    i = waiting_index(sim)
    async with client() as c:
        for bad in (
            {"askQuestion": {"responses": "1"}},
            {"askQuestion": "1"},
            {"permission": {"allow": True}},
        ):
            r = await call(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, **bad))
            assert r.status_code == 500 and r.json()["message"] == f"input not registered for step {i}"
    assert sim.steps()[i]["status"] == "CORTEX_STEP_STATUS_WAITING"


async def test_a_file_write_waits_for_a_review_of_another_kind(sim: Simulator) -> None:
    """The simulator's guessed ``fileReview`` gate: refused as a permission or a question, accepted
    with its own field (what the simulated terminal sends)."""
    await sim.submit_user_turn("write the file notes.md")
    await sim.wait_idle()
    i = waiting_index(sim)
    step = sim.steps()[i]
    assert step["type"] == "CORTEX_STEP_TYPE_WRITE_TO_FILE"
    assert set(step["requestedInteraction"]) == {"fileReview"}
    async with client() as c:
        for bad in ({"permission": {"allow": True}}, {"askQuestion": {"responses": []}}):
            r = await call(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, **bad))
            assert r.status_code == 500
        await ok(c, sim, "HandleCascadeUserInteraction", interaction(sim, i, fileReview={"accepted": False}))
    await sim.wait_idle()
    assert sim.steps()[i]["status"] == "CORTEX_STEP_STATUS_ERROR"
    planners = [s for s in sim.steps() if "response" in s.get("plannerResponse", {})]
    assert planners[-1]["plannerResponse"]["response"] == "You rejected the write to notes.md."
