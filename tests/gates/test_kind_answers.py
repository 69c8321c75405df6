"""Every kind answered from here (issue 45), through the public path -- ``Session.answer`` on the
simulator, which takes each kind's answer only in its descriptor's shape -- with what agy receives
read from the simulator: the card in words, each offered answer in the descriptor's shape, a deny
never in a shape that proceeds, and agy's refusal reaching the human and the decision ledger."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.interactions import proceeds
from agy_harness.adapters.simulator.kind_steps import FIELD_OF
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.composition.root.session import open_session
from agy_harness.core.answers import AnswerError
from agy_harness.core.kinds import describe
from agy_harness.core.scopes import allow_choices, deny_label, scope_label
from agy_harness.ports.errors import AnswerNotDelivered
from agy_harness.ports.events import AGY_REFUSED, Notice
from agy_harness.ports.protocols import GateAnswer
from tests.integration.helpers import FAST

from .helpers import Watch, session_on
from .test_kinds import DESCRIBED, RAW_NAMES

#: per kind: what the turn asks, what the card must say, the allow and the deny agy must receive
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "openBrowserUrl": ("https://example.com/a", "agy asks to open https://example.com/a in a browser",
                       {"confirm": True}, {"confirm": False}),
    "runExtensionCode": ("vscode.commands.executeCommand('x')",
                         "agy asks to run extension code: vscode.commands.executeCommand('x')",
                         {"confirm": True}, {"confirm": False}),
    "executeBrowserJavascript": ("document.cookie", "agy asks to run JavaScript in the browser: document.cookie",
                                 {"confirm": True}, {"confirm": False}),
    "captureBrowserScreenshot": ("home", 'agy asks to capture a browser screenshot: pageId="page-1" screenshotName="home"',
                                 {"confirm": True}, {"confirm": False}),
    "clickBrowserPixel": ("page-9", 'agy asks to click in the browser: pageId="page-9" x=120 y=48',
                          {"confirm": True}, {"confirm": False}),
    "browserAction": ("hunter2", "agy asks to act in the browser: hunter2", {"confirm": True}, {"confirm": False}),
    "openBrowserSetup": ("", "agy asks to open the browser setup", {"confirm": True}, {"confirm": False}),
    "confirmBrowserSetup": ("", "agy asks to confirm the browser setup", {"confirm": True}, {"confirm": False}),
    "sendCommandInput": ("yes\\n", "agy asks to send input to a running command: yes\\n",
                         {"confirm": True}, {"confirm": False}),
    "readUrlContent": ("https://example.com/docs", "agy asks to read https://example.com/docs",
                       {"confirm": True}, {"confirm": False}),
    "mcp": ("create_issue", "agy asks to use the MCP tool github/create_issue", {"confirm": True}, {"confirm": False}),
    "filePermission": ("file:///etc", "agy asks to access file:///etc (a directory) outside the workspace",
                       {"allow": True, "scope": "PERMISSION_SCOPE_ONCE", "absolutePathUri": "file:///etc"},
                       {"allow": False, "absolutePathUri": "file:///etc"}),
    "deploy": ("my-site", 'agy asks to deploy {"name": "my-site"}',
               {"cancel": False, "deployTarget": {"name": "my-site"}}, {"cancel": True}),
    "plainElicitation": ("Go on?", "the MCP server github asks through agy: Go on?",
                         {"action": "accept", "contentJson": "{}"}, {"action": "decline"}),
}  # fmt: skip


def sent(sim: Simulator) -> dict[str, Any]:
    """The last interaction agy received, without its address."""
    _cascade, interaction = sim.received[-1]
    return {k: v for k, v in interaction.items() if k not in ("trajectoryId", "stepIndex")}


def test_every_described_kind_has_a_case() -> None:
    assert {FIELD_OF.get(f, f) for f in CASES} | {"elicitation", "approvalInteraction"} == set(DESCRIBED)


@pytest.mark.parametrize("field", list(CASES))
@pytest.mark.parametrize("allow", [True, False])
async def test_each_kind_is_carded_in_words_and_answered_in_its_descriptors_shape(
    sim: Simulator, field: str, allow: bool
) -> None:
    subject, card, allowed, denied = CASES[field]
    asked = FIELD_OF.get(field, field)
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask(f"kind: {field} {subject}".strip())
        assert gate.kind == "permission" and gate.answerable and gate.interaction == asked
        assert describe(gate) == card and "agy's terminal" not in card
        assert not any(f"({name})" in card for name in RAW_NAMES)
        assert allow_choices(gate) and gate.no_allow == ""
        await session.answer(gate.gate_id, allow)
        await watch.turn_over()
    message = sent(sim)
    assert message == {asked: allowed if allow else denied}
    assert proceeds(asked, message) is allow  # agy goes on exactly when allowed
    step = sim.steps()[gate.step_index]
    assert proceeds(asked, step["completedInteractions"][-1]["response"]) is allow  # as agy recorded it
    assert step["status"] == ("CORTEX_STEP_STATUS_DONE" if allow else "CORTEX_STEP_STATUS_ERROR")


async def test_a_deploy_is_cancelled_by_cancel_true_never_by_the_empty_message_that_proceeds(
    sim: Simulator,
) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("kind: deploy my-site")
        assert scope_label(gate, "once") == "Deploy" and deny_label(gate) == "Cancel the deploy"
        for deny in (
            False,
            "no",
            "deny",
            "decline",
            "cancel",
            GateAnswer(allow=False),
            GateAnswer(action="cancel"),
        ):
            from agy_harness.core.answers import parse_answer
            from agy_harness.core.elicitation import interaction_payload

            payload = interaction_payload(gate, parse_answer(gate, deny))
            assert payload["deploy"] == {"cancel": True}
            assert proceeds("deploy", payload) is False
        with pytest.raises(AnswerError):  # a deny carries no reason in agy's deploy answer
            await session.answer(gate.gate_id, "no: not today")
        await session.answer(gate.gate_id, "cancel")
        await watch.turn_over()
    assert sent(sim) == {"deploy": {"cancel": True}}
    assert sim.steps()[gate.step_index]["status"] == "CORTEX_STEP_STATUS_ERROR"
    assert proceeds("deploy", {"deploy": {}}) is True  # (what an empty "deny" would have done)


async def test_an_elicitation_asking_for_content_is_accepted_only_with_the_content_given(
    sim: Simulator,
) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("kind: elicitation Which account?")
        card = describe(gate)
        assert card.startswith(
            "the MCP server github asks through agy: Which account? (it asks for: account (string, required))"
        )
        assert "cannot be allowed from here" in card and allow_choices(gate) == ()  # no content-less button
        assert (scope_label(gate, "once"), deny_label(gate)) == ("Accept", "Decline")
        for value in (True, "accept", GateAnswer(allow=True), 'accept: {"acct": "x"}', "accept: [1]",
                      'accept: {"account": 3}', "accept: not json",
                      GateAnswer(allow=False, content='{"account": "me"}')):  # fmt: skip
            with pytest.raises(AnswerError):
                await session.answer(gate.gate_id, value)
        assert sim.received == []  # nothing guessed reached agy
        await session.answer(gate.gate_id, 'accept: {"account": "me@example.com"}')
        await watch.turn_over()
    assert sent(sim) == {"elicitation": {"action": "accept", "contentJson": '{"account":"me@example.com"}'}}


@pytest.mark.parametrize(
    ("value", "action"), [("cancel", "cancel"), ("decline", "decline"), (False, "decline")]
)
async def test_an_elicitation_is_declined_or_cancelled_as_the_human_said(
    sim: Simulator, value: object, action: str
) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("kind: elicitation Which account?")
        await session.answer(gate.gate_id, value)
        await watch.turn_over()
    assert sent(sim) == {"elicitation": {"action": action}}


async def test_an_approval_whose_subject_agy_does_not_say_can_only_be_denied(sim: Simulator) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("kind: approvalInteraction")
        assert gate.answerable and allow_choices(gate) == () and gate.no_allow
        assert "cannot be allowed from here (agy does not say what it would act on)" in describe(gate)
        with pytest.raises(AnswerError):
            await session.answer(gate.gate_id, True)
        await session.answer(gate.gate_id, False)
        await watch.turn_over()
    assert sent(sim) == {"approvalInteraction": {"confirm": False}}


async def test_a_file_grant_for_the_conversation_names_the_path(sim: Simulator) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("kind: nestedFilePermission file:///etc")
        assert allow_choices(gate) == ("once", "conversation")
        assert scope_label(gate, "conversation") == "Allow for this conversation: 'file:///etc'"
        await session.answer(gate.gate_id, "allow conversation")
        await watch.turn_over()
    assert sent(sim) == {
        "filePermission": {
            "allow": True,
            "scope": "PERMISSION_SCOPE_CONVERSATION",
            "absolutePathUri": "file:///etc",
        }
    }


async def test_a_command_leaves_the_sandbox_only_when_the_human_chose_it(sim: Simulator) -> None:
    async with session_on(sim) as session:
        watch = Watch(session)
        gate = await watch.ask("kind: runCommand ls -la")
        await session.answer(gate.gate_id, True)
        await watch.turn_over()
        assert "sandboxOverride" not in sent(sim)["runCommand"]
        gate = await watch.ask("kind: runCommand make deploy")
        with pytest.raises(AnswerError):
            await session.answer(gate.gate_id, GateAnswer(allow=False, sandbox_override=True))
        await session.answer(gate.gate_id, GateAnswer(allow=True, sandbox_override=True))
        await watch.turn_over()
    assert sent(sim)["runCommand"]["sandboxOverride"] is True


@pytest.mark.parametrize("field", ["openBrowserUrl", "deploy", "filePermission"])
async def test_agys_refusal_reaches_the_human_and_the_ledger_says_refused(
    sim: Simulator, tmp_path: Path, field: str
) -> None:
    sim.faults.refuse_kinds = {field}  # an agy whose build takes no such answer over RPC
    subject = CASES[field][0]
    ledger = FileLedger(tmp_path / "ledger")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger) as s:
        watch = Watch(s)
        gate = await watch.ask(f"kind: {field} {subject}")
        with pytest.raises(AnswerNotDelivered):
            await s.answer(gate.gate_id, True)
        notice = await watch.until(lambda e: isinstance(e, Notice) and e.text.startswith(AGY_REFUSED))
        assert isinstance(notice, Notice) and notice.level == "error"
        assert describe(gate) in notice.text and notice.text.count("answer it in agy's terminal") == 1
        assert sim.steps()[gate.step_index]["status"] == "CORTEX_STEP_STATUS_WAITING"  # agy still waits
        await sim.resolve_in_terminal(kind="permission")  # the human goes to agy's terminal
        await watch.turn_over()
    lines = (tmp_path / "ledger" / "ledger.jsonl").read_text().splitlines()
    [delivery] = [r["body"] for r in map(json.loads, lines) if r.get("type") == "delivery"]
    assert delivery["agy"] == "refused" and delivery["interaction"] == field and delivery["taken"] is False
    from agy_harness.composition.root.audit_ledger import kind_tally

    assert kind_tally(tmp_path / "ledger") == {field: {"taken": 0, "refused": 1}}


async def test_a_kind_agy_took_is_tallied_taken(sim: Simulator, tmp_path: Path) -> None:
    ledger = FileLedger(tmp_path / "ledger")
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger) as s:
        watch = Watch(s)
        gate = await watch.ask("kind: readUrlContent https://example.com/")
        await s.answer(gate.gate_id, "yes")
        await watch.turn_over()
    from agy_harness.composition.root.audit_ledger import kind_tally
    from agy_harness.core.kind_tally import tally_lines

    counts = kind_tally(tmp_path / "ledger", conversation=sim.cascade_id)
    assert counts == {"readUrlContent": {"taken": 1, "refused": 0}}
    assert tally_lines(counts) == [
        "gate kinds whose answer this agy took (decision ledger): read a web page ×1"
    ]
