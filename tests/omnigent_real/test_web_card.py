"""omnigent's web card, read in a real browser (Debian's chromium via playwright) from the REAL
omnigent 0.19.1 server's own web UI, as a person sees it (issue 40 point 3, issue 34).

The sink parks agy's gate on omnigent's hook; the page at ``/c/<session>`` renders its approval card
(``[data-testid=approval-card]``). The command must read exactly as agy will run it (a ``[test]``
extra once read ``\\[test]``: text escaped for omnigent's terminal chat), and the card's buttons
are the harness's labelled choices, each reaching agy as exactly that answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.core.display import request_hash
from tests.board.helpers import browser_page
from tests.chromium import SHARED_IN_MODULE

from .helpers import Omnigent, mirrored

pytestmark = SHARED_IN_MODULE  # on the module's loop, one chromium for the module
WAIT = 120.0  # a ceiling on condition waits (a loaded machine), never a timed assertion
COMMAND = "pip install -e '.[test]'"


async def ran(sim: Simulator, n: int = 1) -> dict[str, Any]:
    """The ``n``-th RUN_COMMAND step, once agy no longer waits on it and it has finished running
    (what agy received; an allowed step is RUNNING for a moment before DONE)."""
    async with asyncio.timeout(WAIT):
        while True:
            runs = [s for s in sim.steps() if s["type"].endswith("RUN_COMMAND")]
            if len(runs) >= n and not runs[n - 1]["status"].endswith(("WAITING", "RUNNING", "PENDING")):
                return runs[n - 1]
            await asyncio.sleep(0.05)


async def card_of(page: Any) -> Any:
    card = page.locator('[data-testid="approval-card"][data-state="pending"]')
    await card.first.wait_for(timeout=WAIT * 1000)
    return card.first


async def test_the_web_card_shows_the_command_exactly(omni: Omnigent) -> None:
    async with mirrored(omni) as (sid, sim, session):
        await session.send(f"run: {COMMAND}")
        pending = await omni.wait_pending(sid, timeout=WAIT)
        async with browser_page(f"{omni.base_url}/c/{sid}") as page:
            card = await card_of(page)
            text = await card.inner_text()
            buttons = [b.strip() for b in await card.locator("button").all_inner_texts()]
            assert COMMAND in text, text
            assert "\\" not in text, text  # nothing escaped for the chat shows on the web
            # the command reads alone (no hash glued to it: `cmd #1a2b3c4d` reads as a shell comment);
            # the request's short hash is on the card beside it, as a marker (issue 35 point 2)
            assert f"{COMMAND} (in " in text and f"⋯ {request_hash(COMMAND)} ⋯" in text, text
            assert pending["params"]["command"] == COMMAND
            assert buttons[0] == "Allow once" and buttons[-1] == "Deny", buttons
            # the chat's field (printed as rich markup) carries the escaped text; the web never shows it
            assert "pip install -e '.\\[test]'" in pending["params"]["content_preview"]
            await card.get_by_role("button", name="Allow once").click()
            run = await ran(sim)
        assert run["status"] == "CORTEX_STEP_STATUS_DONE"
        assert run["completedInteractions"][-1]["response"]["permission"] == {"allow": True}
        assert [c for c, _cwd in sim.executed] == [COMMAND]


SCOPED_CHOICES = [
    ("Allow once", {"allow": True}),
    (
        "Allow for this conversation: commands that start with 'ls'",
        {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"},
    ),
    ("Always allow: commands that start with 'ls'", {"allow": True, "scope": "PERMISSION_SCOPE_GLOBAL"}),
    ("Deny", {"allow": False}),
]


@pytest.mark.parametrize(("label", "sent"), SCOPED_CHOICES, ids=["once", "conversation", "global", "deny"])
async def test_each_choice_clicked_on_the_web_card_reaches_agy_as_that_scope(
    omni: Omnigent, label: str, sent: dict[str, Any]
) -> None:
    """issue 34: the card offers each of the gate's scopes, labelled by the core (agy's pattern
    verbatim), and nothing else: omnigent's own "Allow commands starting with ls for this session"
    (which acted as allow once) is gone. What agy received is exactly the clicked choice."""
    async with mirrored(omni) as (sid, sim, session):
        await session.send("run: ls -la")
        await omni.wait_pending(sid, timeout=WAIT)
        async with browser_page(f"{omni.base_url}/c/{sid}") as page:
            card = await card_of(page)
            buttons = [b.strip() for b in await card.locator("button").all_inner_texts()]
            assert buttons == [choice for choice, _ in SCOPED_CHOICES], buttons
            assert "for this session" not in await card.inner_text()
            await card.get_by_role("button", name=label, exact=True).click()
            run = await ran(sim)
        [(_cascade, received)] = sim.received
        assert received["permission"] == sent
        recorded = {k: v for k, v in sent.items() if v}  # proto-JSON: a false allow is left out
        assert run["completedInteractions"][-1]["response"]["permission"] == recorded
        assert [c for c, _ in sim.executed] == ([] if label == "Deny" else ["ls -la"])
        if label.startswith("Allow for this conversation"):
            # the grant is agy's: the next identical request runs with no card at all
            await session.send("run: ls src")
            await ran(sim, 2)
            assert [c for c, _ in sim.executed] == ["ls -la", "ls src"]
            assert len(sim.received) == 1 and await omni.pending(sid) == []
