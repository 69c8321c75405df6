"""The board's history view (issue #36) in a real browser against the simulator: two gates of one
conversation answered, one on the board and one in agy's own terminal; the conversation view says who
answered each retired card, and its History lists both decisions from the ledger, newest first, each
with its surface."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator import Simulator

from .helpers import answer_in_terminal, board_on, require_chromium, until


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


async def test_history_lists_both_decisions_with_who_and_where() -> None:
    async with Simulator(pace=0.02, gate_timeout=None) as sim, board_on(sim, tick=0.2) as (_board, page):
        await page.wait_for_selector(".row")
        await sim.submit_user_turn("run: git status")
        card = page.locator("#cards .card[data-kind=permission]")
        await card.wait_for()
        await card.get_by_role("button", name="Allow once").click()  # answered on the board
        await card.wait_for(state="detached")
        await until(lambda: not sim.is_running())

        await page.locator(".row").first.click()
        said = page.locator("#stream .line.decided", has_text="allowed by you on the board")
        await said.first.wait_for()  # the retired card says who answered it, and where

        await page.locator("#turn").fill("run: ls -la")
        await page.keyboard.press("Control+Enter")
        await page.wait_for_selector("#s-cards .card[data-kind=permission]")
        await answer_in_terminal(sim, sim.cascade_id)  # answered in agy's own terminal
        await page.wait_for_selector("#s-cards .card", state="detached")
        await page.locator("#stream .line.decided", has_text="answered in agy's terminal").first.wait_for()
        await until(lambda: not sim.is_running())

        await page.get_by_role("button", name="History").click()
        rows = page.locator("#history tr.h-row")
        await rows.nth(1).wait_for()
        assert await rows.count() == 2
        newest, older = (await rows.nth(0).inner_text()), (await rows.nth(1).inner_text())
        assert "ls -la" in newest and "answered in agy's terminal" in newest and "allow" in newest
        assert "git status" in older and "allowed by you on the board" in older and "once" in older
        assert await page.get_by_role("button", name="History").get_attribute("aria-pressed") == "true"
        await page.get_by_role("button", name="History").click()  # the toggle hides it again
        assert await page.locator("#history").is_hidden()
        assert page.errors == []
