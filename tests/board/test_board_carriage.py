"""Carriage returns in the board's replies and command output (issue 47), in chromium against the
simulator: agy's reply quoting ``git status`` (CRLF line ends) and ``pip install``'s progress bar (a
line redrawn with bare CRs) read as a terminal shows them, never a literal ``\\r`` (the newcomer saw
``\\r`` in the board's replies). A CR inside a command a human approves stays visible: what runs is
shown exactly (tests/board/test_board_browser.py's hostile command)."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator import Simulator
from tests.chromium import SHARED

from .helpers import answer_in_terminal, board_on, require_chromium

pytestmark = SHARED  # the worker's chromium, on the session's loop


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


async def test_replies_and_output_show_carriage_returns_as_a_terminal_does() -> None:
    """Fails before the fix: the reply read ``On branch main\\r`` and the output ``\\rDownloading``."""
    async with Simulator(pace=0, gate_timeout=None) as sim:
        for turn in ("run: git status", "run: pip install rich"):
            await sim.submit_user_turn(turn)  # typed in agy's terminal, allowed there
            await sim.wait_idle(timeout=10)  # (parked on its gate)
            await answer_in_terminal(sim, sim.cascade_id)
        async with board_on(sim, tick=0.2) as (_board, page):
            await page.locator(".row").first.click()
            replies = page.locator("#stream .msg.assistant")
            await replies.nth(1).wait_for()
            outputs = page.locator("#stream pre.tool-out")
            await outputs.nth(1).wait_for()
            git_reply, pip_reply = [await replies.nth(i).inner_text() for i in (0, 1)]
            git_out, pip_out = [await outputs.nth(i).inner_text() for i in (0, 1)]
            page_text = await page.locator("#stream").inner_text()
            assert "\\r" not in page_text and "\r" not in page_text, page_text
            assert "On branch main\nYour branch is up to date" in git_reply
            assert git_out.splitlines()[:2] == [
                "On branch main",
                "Your branch is up to date with 'origin/main'.",
            ]
            # the progress bar as a terminal leaves it: its last state, once
            assert pip_out.splitlines() == [
                "Collecting rich",
                "Downloading 100%",
                "Successfully installed rich",
            ]
            assert "Downloading 100%" in pip_reply and "10%" not in pip_reply
            assert page.errors == []
