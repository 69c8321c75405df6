"""Every kind issue 45 made answerable, on the REAL omnigent 0.19.1 server (one omnigent session mirroring
one simulator for the module): the card omnigent stores says in words what agy asks, its buttons are
the gate's allows and its deny in the kind's words (none of the allows where ``no_allow``; an
elicitation asking for content says where to give it), and each button -- resolved as omnigent's web
UI resolves it, and clicked in chromium for the deploy -- reaches agy (the simulator's record) in the
descriptor's shape, a deny never in a shape that proceeds. agy's refusal reaches omnigent's
conversation with "answer it in agy's terminal"."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.interactions import proceeds
from agy_harness.adapters.simulator.kind_steps import FIELD_OF
from agy_harness.adapters.sinks.omnigent.cards import NO_CONTENT
from agy_harness.composition.root.session import Session
from tests.board.helpers import browser_page
from tests.gates.test_kind_answers import CASES

from .helpers import WAIT, Omnigent, mirrored, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALLOW_LABEL = {"deploy": "Deploy", "plainElicitation": "Accept"}
DENY_LABEL = {"deploy": "Cancel the deploy", "plainElicitation": "Decline", "elicitation": "Decline"}


class Mirror:
    def __init__(self, omni: Omnigent, sid: str, sim: Simulator, session: Session) -> None:
        self.omni, self.sid, self.sim, self.session = omni, sid, sim, session
        self.seen: list[str] = []

    async def card(self, turn: str) -> dict[str, Any]:
        """The card omnigent lists for the gate ``turn`` asks."""
        await self.sim.wait_idle(timeout=WAIT)
        await self.session.send(turn)
        card = await self.omni.wait_pending(self.sid, not_in=self.seen, timeout=WAIT)
        self.seen.append(card["elicitation_id"])
        return card

    async def answer(self, card: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """Resolve ``card`` as omnigent's web UI does; what agy then received."""
        before = len(self.sim.received)
        r = await self.omni.resolve(self.sid, card["elicitation_id"], body)
        assert r.status_code == 202, r.text

        async def arrived() -> bool:
            return len(self.sim.received) > before

        await until(arrived)
        [(_, sent)] = self.sim.received[before:]
        return {k: v for k, v in sent.items() if k not in ("trajectoryId", "stepIndex")}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def on(omni: Omnigent) -> AsyncIterator[Mirror]:
    async with mirrored(omni, pace=0) as (sid, sim, session):
        yield Mirror(omni, sid, sim, session)


def strings(value: Any) -> list[str]:
    """Every text in omnigent's stored items."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [t for v in value for t in strings(v)] if isinstance(value, list) else []


def buttons(card: dict[str, Any]) -> list[str]:
    return list(card["params"]["requestedSchema"]["properties"]["answer"]["enum"])


@pytest.mark.parametrize("allow", [True, False], ids=["allow", "deny"])
@pytest.mark.parametrize("field", list(CASES))
async def test_each_kind_is_carded_in_words_and_each_button_reaches_agy_in_its_shape(
    on: Mirror, field: str, allow: bool
) -> None:
    subject, words, allowed, denied = CASES[field]
    asked = FIELD_OF.get(field, field)
    card = await on.card(f"kind: {field} {subject}".strip())
    params = card["params"]
    assert params["message"] == words  # what agy asks, in words, on the web and in the chat
    expected = [ALLOW_LABEL.get(field, "Allow once")]
    if asked == "filePermission":
        expected.append(f"Allow for this conversation: '{subject}'")
    assert buttons(card) == [*expected, DENY_LABEL.get(field, "Deny")]
    label = buttons(card)[0] if allow else buttons(card)[-1]
    sent = await on.answer(card, {"action": "accept", "content": {"answer": label}})
    assert sent == {asked: allowed if allow else denied}
    assert proceeds(asked, sent) is allow  # agy goes on exactly when allowed


async def test_the_chats_n_is_the_kinds_deny(on: Mirror) -> None:
    """omnigent's chat ``n`` (and the web's dismiss) declines: a deploy is cancelled by ``cancel: true``."""
    card = await on.card("kind: deploy my-site")
    assert "n = Cancel the deploy" in card["params"]["content_preview"]
    assert await on.answer(card, {"action": "decline"}) == {"deploy": {"cancel": True}}


async def test_an_elicitation_asking_for_content_offers_only_decline_and_says_where_to_accept(
    on: Mirror,
) -> None:
    card = await on.card("kind: elicitation Which account?")
    assert buttons(card) == ["Decline"]
    params = card["params"]
    assert params["message"].startswith(
        "the MCP server github asks through agy: Which account? (it asks for: account (string, required))"
    )
    assert NO_CONTENT in params["action_description"]  # the web card
    assert "agy board" in params["content_preview"]  # the chat
    sent = await on.answer(card, {"action": "accept", "content": {"answer": "Decline"}})
    assert sent == {"elicitation": {"action": "decline"}}


async def test_a_deploy_card_in_chromium_is_cancelled_by_its_own_button(on: Mirror) -> None:
    card = await on.card("kind: deploy my-site")
    before = len(on.sim.received)
    async with browser_page(f"{on.omni.base_url}/c/{on.sid}") as page:
        web = page.locator('[data-testid="approval-card"][data-state="pending"]').first
        await web.wait_for(timeout=WAIT * 1000)
        assert [b.strip() for b in await web.locator("button").all_inner_texts()] == [
            "Deploy",
            "Cancel the deploy",
        ]
        assert 'agy asks to deploy {"name": "my-site"}' in await web.inner_text()
        await web.get_by_role("button", name="Cancel the deploy").click()

        async def arrived() -> bool:
            return len(on.sim.received) > before

        await until(arrived)
    [(_, sent)] = on.sim.received[before:]
    assert sent["deploy"] == {"cancel": True} and card["elicitation_id"]


async def test_agys_refusal_reaches_omnigents_conversation(on: Mirror) -> None:
    on.sim.faults.refuse_kinds = {"deploy"}  # an agy whose build takes no deploy answer over RPC
    try:
        card = await on.card("kind: deploy my-site")
        r = await on.omni.resolve(
            on.sid, card["elicitation_id"], {"action": "accept", "content": {"answer": "Deploy"}}
        )
        assert r.status_code == 202, r.text

        async def told() -> bool:
            return "agy refused the answer to: agy asks to deploy" in json.dumps(await on.omni.items(on.sid))

        await until(told)
        [said] = [t for t in strings(await on.omni.items(on.sid)) if "agy refused the answer" in t]
        assert said.count("answer it in agy's terminal") == 1, said
    finally:
        on.sim.faults.refuse_kinds = set()
    await on.sim.resolve_in_terminal(kind="permission")  # the human answers in agy's terminal
    await on.sim.wait_idle(timeout=WAIT)
