"""issue 45: omnigent's Reject, Approve and Stop on a card only agy's terminal can answer, clicked on
omnigent 0.19.1's own web UI (Debian's chromium via playwright) while its terminal chat runs in tmux
(``chat.py``): omnigent's server, host daemon, runner, harness process, web UI and chat are all its
own; agy is the simulator.

omnigent's runner answers a Reject (``decline``) by first posting ``interrupt`` to the harness, then
the verdict (``runner/app.py``, ``body_type == "approval"``); its Stop posts ``interrupt`` alone. agy's
cancel does not free a gate that waits (the simulator models it), and no one off agy's terminal can
answer this one. Before the fix, a Reject marked the card "Rejected" and the turn "Interrupted" while
agy still waited, and the next typed turn hung with no card. What is asserted: what the page shows
(the pending card, the interrupted marker), what the chat shows, and that agy still waits / moves on.

The gate is ``artifactReviewPolicy``: a kind nothing here answers (no evidenced answer shape)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agy_harness.adapters.simulator.scenarios import GREETING
from tests.board.helpers import browser_page
from tests.chromium import SHARED_IN_MODULE

if shutil.which("tmux") is None:  # (in CI a skip fails the run: tests/ci_skips.py)
    pytest.skip("the tmux binary is not on PATH (.ci/run installs it)", allow_module_level=True)

from .chat import SERVER_POLL, WAIT, Chat, open_chat

pytestmark = SHARED_IN_MODULE  # on the module's loop, one chromium for the module
TURN = "kind: artifactReviewPolicy"
PENDING = '[data-testid="approval-card"][data-state="pending"]'
INTERRUPTED = '[data-testid="assistant-interrupted-indicator"]'


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chat(
    plugin_python: Path,
    plugin_server: str,
    plugin_host: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Chat]:
    async with open_chat(
        plugin_python, tmp_path_factory.mktemp("clicks"), server=plugin_server, home=plugin_host
    ) as opened:
        yield opened


def waiting(chat: Chat) -> list[dict[str, Any]]:
    """agy's steps that wait for an answer now."""
    return [s for s in chat.sim.steps() if str(s.get("status", "")).endswith("WAITING")]


async def card_other_than(chat: Chat, seen: set[str]) -> dict[str, Any]:
    """The one pending card whose id is not in ``seen``, once there is one."""
    async with asyncio.timeout(WAIT):
        while True:
            cards = [c for c in await chat.pending() if c["elicitation_id"] not in seen]
            if cards:
                [card] = cards
                return card
            await asyncio.sleep(SERVER_POLL)


async def clicked_back(chat: Chat, button: str) -> None:
    """A terminal-only card is up; ``button`` is clicked on the web UI: the card is shown again,
    saying why, the turn is not shown interrupted, agy still waits; then answered in agy's terminal
    the turn ends as agy's did, and the next typed turn runs."""
    mark = await chat.turn(TURN)
    first = await chat.card()
    assert first["params"]["phase"] == "agy_terminal_only"
    async with browser_page(f"{chat.url}/c/{chat.session_id}") as page:
        card = page.locator(PENDING)
        await card.first.wait_for(timeout=WAIT * 1000)
        await card.first.get_by_role("button", name=button, exact=True).click()
        again = await card_other_than(chat, {first["elicitation_id"]})
        assert again["params"]["phase"] == "agy_terminal_only"
        why = again["params"]["message"]
        assert why.startswith("Nothing was sent to agy"), why
        assert why.count("agy's terminal") == 1, why  # said once on the card
        await page.locator(PENDING).first.wait_for(timeout=WAIT * 1000)  # the page shows it again
        shown = await page.locator(PENDING).first.inner_text()
        assert "Nothing was sent to agy" in shown, shown
        assert await page.locator(INTERRUPTED).count() == 0
        assert not chat.sleeping()  # the chat's turn runs on: agy waits
        [step] = waiting(chat)  # agy still waits on it
        assert "artifactReviewPolicy" in step["requestedInteraction"]
        await chat.sim.resolve_in_terminal()  # answered in agy's own terminal
        await chat.no_card()
        await chat.idle()
        await page.reload()  # the turn as stored: it ended as agy's did, not interrupted
        await page.get_by_text(TURN).last.wait_for(timeout=WAIT * 1000)
        assert await page.locator(INTERRUPTED).count() == 0
    assert not waiting(chat)
    mark = await chat.turn("Say hello in one short sentence.")  # the next typed turn runs
    await chat.wait(GREETING, since=mark)
    await chat.idle()


async def test_reject_on_a_card_only_agys_terminal_answers_shows_it_again(chat: Chat) -> None:
    await clicked_back(chat, "Reject")


async def test_approve_on_a_card_only_agys_terminal_answers_shows_it_again(chat: Chat) -> None:
    await clicked_back(chat, "Approve")
