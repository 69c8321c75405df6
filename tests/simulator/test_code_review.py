"""agy's file-edit review in the simulator: a CODE_ACTION that waits until a human accepts or rejects
its diff, answered by ``AcknowledgeCodeActionStep`` in the descriptor's shape (and refused in any
other); what the user finds on disk follows the answer."""

from __future__ import annotations

from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator

from .helpers import call, client, interaction, ok, waiting_index

SCOPE = "CODE_ACKNOWLEDGEMENT_SCOPE_FILE"


async def _proposed(sim: Simulator) -> tuple[int, str]:
    await sim.submit_user_turn("edit the file notes.txt")
    await sim.wait_idle()
    i = waiting_index(sim)
    return i, f"{sim.workspace}/notes.txt"


def _ack(sim: Simulator, i: int, path: str, accept: bool, **extra: Any) -> dict[str, Any]:
    return {
        "cascadeId": sim.cascade_id,
        "accept": accept,
        "acknowledgementScope": SCOPE,
        "codeAcknowledgementRequestInfos": [{"uriPath": path, "stepIndices": [i]}],
        **extra,
    }


def _reply(sim: Simulator) -> str:
    planners = [s for s in sim.steps() if "response" in s.get("plannerResponse", {})]
    return str(planners[-1]["plannerResponse"]["response"])


async def test_the_edit_waits_unacknowledged_with_its_diff(sim: Simulator) -> None:
    i, path = await _proposed(sim)
    step = sim.steps()[i]
    assert step["type"] == "CORTEX_STEP_TYPE_CODE_ACTION"
    assert "requestedInteraction" not in step and "acknowledgementType" not in step["codeAction"]
    edit = step["codeAction"]["actionResult"]["edit"]
    assert edit["absoluteUri"] == f"file://{path}"
    kinds = [line["type"].rsplit("_", 1)[-1] for line in edit["diff"]["unifiedDiff"]["lines"]]
    assert "INSERT" in kinds and "DELETE" in kinds
    assert path not in sim.files  # nothing applied while it waits


async def test_accepted_the_edit_is_applied(sim: Simulator) -> None:
    i, path = await _proposed(sim)
    async with client() as c:
        await ok(c, sim, "AcknowledgeCodeActionStep", _ack(sim, i, path, True))
    await sim.wait_idle()
    step = sim.steps()[i]
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert step["codeAction"]["acknowledgementType"] == "ACKNOWLEDGEMENT_TYPE_ACCEPT"
    assert (
        sim.files[path]
        == step["codeAction"]["actionSpec"]["command"]["replacementChunks"][0]["replacementContent"]
    )
    record = next(s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_CODE_ACKNOWLEDGEMENT")
    assert record["codeAcknowledgement"]["isAccept"] is True
    assert record["codeAcknowledgement"]["codeAcknowledgementInfos"][0]["uriPath"] == path
    assert _reply(sim) == "I applied the edit to notes.txt."


async def test_rejected_with_feedback_the_file_keeps_its_text(sim: Simulator) -> None:
    i, path = await _proposed(sim)
    async with client() as c:
        await ok(
            c,
            sim,
            "AcknowledgeCodeActionStep",
            _ack(sim, i, path, False, writtenFeedback="keep the old line"),
        )
    await sim.wait_idle()
    step = sim.steps()[i]
    assert step["codeAction"]["acknowledgementType"] == "ACKNOWLEDGEMENT_TYPE_REJECT"
    assert sim.files[path] == step["codeAction"]["actionResult"]["edit"]["originalContent"]
    assert (
        _reply(sim)
        == "You rejected the edit to notes.txt, so it was not applied; you said: keep the old line"
    )


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"acceptt": True}, 400),  # an unknown field
        ({"accept": "yes"}, 400),  # a wrong type
        ({"acknowledgementScope": "FILE"}, 400),  # not an enum name
        ({"acknowledgementScope": "CODE_ACKNOWLEDGEMENT_SCOPE_ALL"}, 500),  # another scope
        ({"codeAcknowledgementRequestInfos": []}, 500),  # names no review
        ({"codeAcknowledgementRequestInfos": [{"uriPath": "/elsewhere.txt", "stepIndices": [0]}]}, 500),
        ({"codeAcknowledgementRequestInfos": [{"uriPath": "X", "stepIndices": [1], "diff": {}}]}, 400),
    ],
)
async def test_other_shapes_are_refused_and_nothing_is_applied(
    sim: Simulator, change: dict[str, Any], status: int
) -> None:
    i, path = await _proposed(sim)
    body = {**_ack(sim, i, path, True), **change}
    if "acceptt" in change:
        del body["accept"]
    async with client() as c:
        r = await call(c, sim, "AcknowledgeCodeActionStep", body)
        assert r.status_code == status, r.text
        # nor is it an interaction: HandleCascadeUserInteraction cannot answer it
        r = await call(
            c, sim, "HandleCascadeUserInteraction", interaction(sim, i, codeAction={"accept": True})
        )
        assert r.status_code == 500
    assert sim.steps()[i]["status"] == "CORTEX_STEP_STATUS_WAITING"
    assert path not in sim.files
    assert sim.acknowledged[-1] == body  # what agy was told, refused too


async def test_reviewed_in_agys_terminal_an_acknowledgement_after_it_is_refused(sim: Simulator) -> None:
    i, path = await _proposed(sim)
    assert await sim.resolve_in_terminal(kind="review", accept=False) == i
    await sim.wait_idle()
    assert sim.files[path] == sim.steps()[i]["codeAction"]["actionResult"]["edit"]["originalContent"]
    async with client() as c:
        r = await call(c, sim, "AcknowledgeCodeActionStep", _ack(sim, i, path, True))
    assert r.status_code == 500 and r.json()["message"] == f"no unacknowledged steps for file {path}"
    assert sim.steps()[i]["codeAction"]["acknowledgementType"] == "ACKNOWLEDGEMENT_TYPE_REJECT"
