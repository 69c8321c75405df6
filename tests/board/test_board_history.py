"""The board's history view (issue #36) in a real browser against the simulator: two gates of one
conversation answered, one on the board and one in agy's own terminal; the conversation view says who
answered each retired card, and its History lists both decisions from the ledger, newest first, each
with its surface."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator import Simulator
from tests.chromium import SHARED

from .helpers import answer_in_terminal, board_on, require_chromium, until

pytestmark = SHARED  # the worker's chromium, on the session's loop


def _outcome_written(cascade_id: str) -> bool:
    """This run's ledger (``AGY_HARNESS_LEDGER_DIR``, the board's) holds an outcome of ``cascade_id``."""
    from agy_harness.adapters.store.ledger_file import default_dir
    from tests.ledger.helpers import records

    return any(r["body"].get("conversation") == cascade_id for r in records(default_dir(), "outcome"))


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


async def test_history_says_what_ran_when_a_hook_rewrote_the_approved_command() -> None:
    """Allowed on the board, then rewritten by a hook: the History row of that decision says what ran
    and what was approved (the ledger's outcome record), not only what was asked."""
    async with Simulator(pace=0.02, gate_timeout=None) as sim, board_on(sim, tick=0.2) as (_board, page):
        await page.wait_for_selector(".row")
        sim.faults.rewrite_command_once = "rm -rf /tmp/x"
        await sim.submit_user_turn("run: git status")
        card = page.locator("#cards .card[data-kind=permission]")
        await card.wait_for()
        await card.get_by_role("button", name="Allow once").click()
        await card.wait_for(state="detached")
        await until(lambda: not sim.is_running())
        assert sim.executed[-1][0] == "rm -rf /tmp/x"

        await page.locator(".row").first.click()
        await page.locator("#stream .line.decided", has_text="allowed by you on the board").first.wait_for()
        await until(lambda: _outcome_written(sim.cascade_id), timeout=30)  # (written after the result)
        await page.get_by_role("button", name="History").click()
        ran = page.locator("#history tr.h-row .h-ran")
        await ran.first.wait_for()
        assert await ran.first.inner_text() == "⚠ ran `rm -rf /tmp/x`, not what was approved: `git status`"
        assert "git status" in await page.locator("#history tr.h-row .h-shown").first.inner_text()
        assert page.errors == []
