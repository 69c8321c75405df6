"""agy's file-edit review on the board, in a real browser against the simulator: the card shows the
file and its whole diff with Accept / Reject (+ why); the click reaches agy by
``AcknowledgeCodeActionStep`` in the descriptor's shape, and the file is as the person decided."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator import Simulator
from tests.chromium import SHARED

from .helpers import board_on, require_chromium, until

pytestmark = SHARED  # the worker's chromium, on the session's loop

EDIT = "edit the file notes.txt"


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


def _review(sim: Simulator) -> dict:
    return next(s for s in sim.steps() if s.get("type", "").endswith("CODE_ACTION"))


async def test_accept_an_edit_from_the_board() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn(EDIT)
        path = f"{sim.workspace}/notes.txt"
        async with board_on(sim, tick=0.2) as (_board, page):
            card = page.locator("#cards .card[data-kind=permission]")
            await card.wait_for()
            assert (
                await card.locator(".ask").inner_text()
                == f"agy asks to edit {path} (accept or reject its diff)"
            )
            diff = (await card.locator("pre.cmd.diff").inner_text()).split("\n")
            # the whole diff, every line marked (an unchanged blank line shows blank, by the display
            # rule; its hash line last)
            assert diff[:7] == [
                " # notes.txt",
                "",
                "-The old line.",
                "+The new line.",
                " Kept as it is.",
                "+An added line.",
                diff[6],
            ]
            assert diff[6].startswith("⋯ #")
            assert await card.get_by_role("button", name="Deny").count() == 0  # its words: Accept / Reject
            await card.get_by_role("button", name="Accept").click()
            await card.wait_for(state="detached")
            await until(lambda: not sim.is_running())
        step = _review(sim)
        assert sim.acknowledged == [
            {
                "cascadeId": sim.cascade_id,
                "accept": True,
                "acknowledgementScope": "CODE_ACKNOWLEDGEMENT_SCOPE_FILE",
                "codeAcknowledgementRequestInfos": [
                    {"uriPath": path, "stepIndices": [sim.steps().index(step)]}
                ],
            }
        ]
        assert sim.received == []  # not an interaction
        assert step["codeAction"]["acknowledgementType"] == "ACKNOWLEDGEMENT_TYPE_ACCEPT"
        assert sim.files[path].endswith("An added line.\n")  # the edit is applied
        assert page.errors == []


async def test_reject_an_edit_with_why_from_the_board() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn(EDIT)
        path = f"{sim.workspace}/notes.txt"
        async with board_on(sim, tick=0.2) as (_board, page):
            card = page.locator("#cards .card[data-kind=permission]")
            await card.wait_for()
            await card.get_by_label("why you reject (optional, agy is told)").fill("keep the old line")
            await card.get_by_role("button", name="Reject").click()
            await card.wait_for(state="detached")
            await until(lambda: not sim.is_running())
            await page.locator(".row").first.click()
            said = page.locator("#stream .msg.assistant", has_text="you said: keep the old line")
            await said.first.wait_for()
            assert "was not applied" in await said.first.inner_text()
            assert page.errors == []
        (told,) = sim.acknowledged
        assert told["accept"] is False and told["writtenFeedback"] == "keep the old line"
        assert told["codeAcknowledgementRequestInfos"][0]["uriPath"] == path
        assert _review(sim)["codeAction"]["acknowledgementType"] == "ACKNOWLEDGEMENT_TYPE_REJECT"
        assert "An added line." not in sim.files[path]  # the file keeps its old text


async def test_a_review_answered_in_agys_terminal_retires_its_card() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn(EDIT)
        async with board_on(sim, tick=0.2) as (_board, page):
            card = page.locator("#cards .card[data-kind=permission]")
            await card.wait_for()
            await sim.resolve_in_terminal(kind="review", accept=True)
            await card.wait_for(state="detached")
            await until(lambda: not sim.is_running())
            assert page.errors == []
        assert sim.acknowledged == []  # the harness sent nothing: agy's terminal answered
