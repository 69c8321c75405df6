"""Every kind issue 45 made answerable, on the board as a person uses it (Debian's chromium against one
simulator for the module): the card says in words what agy asks and shows the exact subject whole,
offers the allows the gate offers with their labels (none where ``no_allow``, which the card says),
the deny in the kind's words, no reason box where agy's answer carries none; each click reaches agy
(the simulator's record) in the descriptor's shape, a deny never in a shape that proceeds. An MCP
elicitation's content is typed by the person and checked before anything is sent; agy's refusal stays
on the page with "answer it in agy's terminal"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.interactions import proceeds
from agy_harness.adapters.simulator.kind_steps import FIELD_OF
from agy_harness.composition.entrypoints.board.command import running_board
from agy_harness.core.display import command_view
from agy_harness.core.kinds import describe
from agy_harness.core.scopes import allow_choices, deny_label, scope_label
from agy_harness.ports.events import GateOpened
from tests.chromium import SHARED
from tests.gates.test_kind_answers import CASES

from .helpers import browser_page, require_chromium, until

pytestmark = SHARED  # the worker's chromium, on the session's loop (the module's board too)


class Board:
    """The module's simulator, board and page; ``ask`` puts one kind in a new conversation."""

    def __init__(self, sim: Simulator, board: Any, page: Any) -> None:
        self.sim, self.board, self.page = sim, board, page

    async def ask(self, turn: str) -> tuple[str, GateOpened, Any]:
        cascade = await self.sim.start_cascade()
        await self.sim.submit_user_turn(turn, cascade_id=cascade)
        await until(lambda: bool(self.board.board.live.get(cascade) and self.board.board.live[cascade].gates))
        [(gate, _card)] = list(self.board.board.live[cascade].gates.values())
        card = self.page.locator(f'#cards .card[data-gate="{gate.gate_id}"]')
        await card.wait_for()
        return cascade, gate, card

    def sent(self, cascade: str) -> list[dict[str, Any]]:
        """What agy received for ``cascade``, without its address."""
        return [
            {k: v for k, v in i.items() if k not in ("trajectoryId", "stepIndex")}
            for c, i in self.sim.received
            if c == cascade
        ]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def on(chromium_per_worker: Any) -> AsyncIterator[Board]:
    require_chromium()
    async with (
        Simulator(pace=0, gate_timeout=None) as sim,
        running_board(agy_ports=[sim.port], tick=0.1) as board,
        browser_page(board.url) as page,
    ):
        yield Board(sim, board, page)
        assert all("status of 4" in e for e in page.errors), page.errors  # (refused POSTs only)


async def buttons(card: Any) -> tuple[list[str], list[str]]:
    allows = await card.locator("button[data-act=allow]").all_inner_texts()
    return allows, await card.locator("button[data-act=deny]").all_inner_texts()


@pytest.mark.parametrize("allow", [True, False], ids=["allow", "deny"])
@pytest.mark.parametrize("field", list(CASES))
async def test_each_kind_is_carded_whole_and_each_button_reaches_agy_in_its_shape(
    on: Board, field: str, allow: bool
) -> None:
    subject, words, allowed, denied = CASES[field]
    asked = FIELD_OF.get(field, field)
    cascade, gate, card = await on.ask(f"kind: {field} {subject}".strip())
    assert gate.interaction == asked and describe(gate) == words
    assert await card.locator(".ask").inner_text() == words  # what agy asks, in words
    p = gate.permission
    assert p is not None
    what = p.target or p.description or p.action
    shown = await card.locator("pre.cmd").inner_text()
    assert shown == "\n".join(command_view(what, 40).lines)  # the exact subject, by the one display rule
    if subject and field not in ("clickBrowserPixel", "captureBrowserScreenshot", "mcp"):
        assert subject in shown
    allows, denies = await buttons(card)
    assert allows == [scope_label(gate, s) for s in allow_choices(gate)] and allows
    assert denies == [deny_label(gate)]
    assert await card.locator("input.deny-reason").count() == 0  # agy's answer carries no reason
    if allow:
        await card.locator("button[data-act=allow][data-scope=once]").click()
    else:
        await card.locator("button[data-act=deny]").click()
    await card.wait_for(state="detached")
    await until(lambda: bool(on.sent(cascade)))
    assert on.sent(cascade) == [{asked: allowed if allow else denied}]
    assert proceeds(asked, on.sent(cascade)[0]) is allow  # agy goes on exactly when allowed


async def test_the_kinds_own_labels_are_its_buttons(on: Board) -> None:
    _c, _g, deploy = await on.ask("kind: deploy my-site")
    assert await buttons(deploy) == (["Deploy"], ["Cancel the deploy"])
    await deploy.get_by_role("button", name="Cancel the deploy").click()
    _c, _g, plain = await on.ask("kind: plainElicitation Go on?")
    assert await buttons(plain) == (["Accept"], ["Decline"])
    await plain.get_by_role("button", name="Decline").click()
    await plain.wait_for(state="detached")


async def test_a_file_grant_for_the_conversation_names_its_path_and_reaches_agy(on: Board) -> None:
    cascade, _gate, card = await on.ask("kind: nestedFilePermission file:///etc")
    allows, _ = await buttons(card)
    assert allows == ["Allow once", "Allow for this conversation: 'file:///etc'"]
    await card.locator("button[data-scope=conversation]").click()
    await until(lambda: bool(on.sent(cascade)))
    assert on.sent(cascade) == [
        {
            "filePermission": {
                "allow": True,
                "scope": "PERMISSION_SCOPE_CONVERSATION",
                "absolutePathUri": "file:///etc",
            }
        }
    ]


async def test_an_approval_that_cannot_be_allowed_says_why_and_offers_only_the_deny(on: Board) -> None:
    cascade, gate, card = await on.ask("kind: approvalInteraction")
    assert gate.no_allow == "agy does not say what it would act on"
    assert await buttons(card) == ([], ["Deny"])
    ask = await card.locator(".ask").inner_text()
    assert "it cannot be allowed from here (agy does not say what it would act on)" in ask
    await card.get_by_role("button", name="Deny").click()
    await until(lambda: bool(on.sent(cascade)))
    assert on.sent(cascade) == [{"approvalInteraction": {"confirm": False}}]


async def test_an_elicitations_content_is_typed_checked_and_sent_as_typed(on: Board) -> None:
    cascade, gate, card = await on.ask("kind: elicitation Which account?")
    assert allow_choices(gate) == ()  # no button accepts with content nobody typed...
    assert await buttons(card) == (["Accept"], ["Decline"])  # ...this one sends what is typed
    ask = await card.locator(".ask").inner_text()
    assert (
        ask
        == "the MCP server github asks through agy: Which account? (it asks for: account (string, required))"
    )
    assert '"required": ["account"]' in await card.locator("pre.schema").inner_text()  # the schema, whole
    box = card.get_by_label("the content to send (a JSON object)")
    accept = card.locator("button[data-act=allow]")
    await accept.click()  # nothing typed: nothing sent, said
    msg = card.locator(".form-msg")
    assert (await msg.inner_text()).startswith("not sent: type the content it asks for")
    await box.fill('{"acct": "me"}')  # not what the server asks for: refused by the core, said
    await accept.click()
    await on.page.wait_for_function(
        'g => (document.querySelector(`#cards .card[data-gate="${g}"] .form-msg`) || {}).textContent',
        arg=gate.gate_id,
        polling=100,
    )
    said = await msg.inner_text()
    assert said.startswith("not sent: the content lacks account") and "Accept again" in said
    assert on.sent(cascade) == []  # nothing guessed or refused reached agy
    await box.fill('{"account": "me@example.com"}')
    await accept.click()
    await card.wait_for(state="detached")
    await until(lambda: bool(on.sent(cascade)))
    assert on.sent(cascade) == [
        {"elicitation": {"action": "accept", "contentJson": '{"account":"me@example.com"}'}}
    ]


async def test_agys_refusal_stays_on_the_page_with_where_to_answer(on: Board) -> None:
    on.sim.faults.refuse_kinds = {"deploy"}  # an agy whose build takes no deploy answer over RPC
    try:
        cascade, gate, card = await on.ask("kind: deploy my-site")
        await card.get_by_role("button", name="Deploy", exact=True).click()
        note = on.page.locator(f'#proposals [data-refused="{gate.gate_id}"]')
        await note.wait_for()
        text = await note.inner_text()
        assert text.startswith("agy refused the answer to: " + describe(gate))
        assert text.count("answer it in agy's terminal") == 1
        step = on.sim.steps(cascade)[gate.step_index]
        assert step["status"] == "CORTEX_STEP_STATUS_WAITING"  # agy still waits: the terminal answers it
        await card.wait_for(state="detached")  # the card retires with the gate...
        assert await note.is_visible()  # ...what agy did stays until dismissed
        await note.get_by_role("button", name="Dismiss").click()
        await note.wait_for(state="detached")
    finally:
        on.sim.faults.refuse_kinds = set()
    await on.sim.resolve_in_terminal(cascade, kind="permission")


@pytest.mark.parametrize(
    ("turn", "subject"),
    [
        ("kind: artifactReviewPolicy", "file:///brain/plan.md"),
        ("kind: allowNonWorkspaceAccess", "file:///etc/hosts"),
    ],
)
async def test_a_kind_no_evidence_answers_is_a_named_card_that_sends_nothing(
    on: Board, turn: str, subject: str
) -> None:
    """The two setting gates (no public source shows their answer): a card in words with the subject,
    "answer in agy's terminal" once, no button; nothing of the board's reaches agy."""
    cascade, gate, card = await on.ask(turn)
    assert gate.kind == "other" and not gate.answerable
    named = describe(gate)
    assert (
        subject in named
        and named.endswith("— answer in agy's terminal")
        and named.count("agy's terminal") == 1
    )
    assert await card.locator(".ask").inner_text() == named
    assert await card.locator("button").all_inner_texts() == ["Open"]  # (opens the conversation)
    assert on.sent(cascade) == []
    await on.sim.resolve_in_terminal(cascade)  # agy's own terminal answers it
    await card.wait_for(state="detached")
