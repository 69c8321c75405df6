"""issue 45 on the omnigent sink (agy followed into a session of the REAL omnigent 0.19.1 server; its
web UI read and clicked in Debian's chromium): a card only agy's terminal can answer says "answer in
agy's terminal" once (the harness's notice saying it too is not posted beside it), and a Reject or an
Approve clicked on it sends nothing to agy and puts the card back, saying why, while agy waits. The
gate is ``artifactReviewPolicy``, a kind nothing here answers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.board.helpers import browser_page
from tests.chromium import SHARED_IN_MODULE

from .helpers import Omnigent, mirrored, until

pytestmark = SHARED_IN_MODULE  # on the module's loop, one chromium for the module
WAIT = 120.0  # a ceiling on condition waits (a loaded machine), never a timed assertion
PENDING = '[data-testid="approval-card"][data-state="pending"]'


def waiting(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in steps if str(s.get("status", "")).endswith("WAITING")]


@pytest.mark.parametrize("button", ["Reject", "Approve"])
async def test_a_click_on_a_card_only_agys_terminal_answers_puts_it_back(omni: Omnigent, button: str) -> None:
    async with mirrored(omni) as (sid, sim, session):
        await session.send("kind: artifactReviewPolicy")
        pending = await omni.wait_pending(sid, timeout=WAIT)
        message = pending["params"]["message"]
        assert message.count("agy's terminal") == 1, message
        async with browser_page(f"{omni.base_url}/c/{sid}") as page:
            card = page.locator(PENDING)
            await card.first.wait_for(timeout=WAIT * 1000)
            await card.first.get_by_role("button", name=button, exact=True).click()

            async def told() -> bool:  # the session says nothing reached agy
                return any("Nothing was sent to agy" in str(i) for i in await omni.items(sid))

            await until(told, WAIT)
            again = await omni.wait_pending(sid, timeout=WAIT)  # the card is back, as agy still waits
            assert again["params"]["phase"] == "agy_terminal_only"
            await page.reload()
            await page.locator(PENDING).first.wait_for(timeout=WAIT * 1000)
            assert len(waiting(sim.steps())) == 1  # agy still waits on it
            assert sim.received == []  # nothing of ours reached agy
            # the harness's notice (it says the same) is not posted beside the card
            said = [str(i) for i in await omni.items(sid) if "agy's terminal" in str(i)]
            assert all("Nothing was sent to agy" in s for s in said), said
            await sim.resolve_in_terminal()  # answered in agy's own terminal: the card leaves

            async def gone() -> bool:
                return not await omni.pending(sid)

            await until(gone, WAIT)
