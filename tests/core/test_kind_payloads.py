"""Each kind's answer message built from the verdict alone (core/kind_answers.py, issue 45), the
content of an MCP elicitation checked against what it asks (core/content.py), and a rule written
before those kinds were answerable never approving one (core/policy_match.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agy_harness.core.answers import AnswerError, parse_answer
from agy_harness.core.elicitation import interaction_payload
from agy_harness.core.kind_answers import CONFIRM_KINDS
from agy_harness.core.kinds import KINDS
from agy_harness.ports.events import GateOpened, PermissionRequest
from agy_harness.ports.protocols import GateAnswer

DENIES: list[Any] = [False, "no", "deny", "n", "decline", "cancel", "reject", GateAnswer(allow=False),
                     GateAnswer(action="decline"), GateAnswer(action="cancel")]  # fmt: skip


def gate(interaction: str, request: dict[str, Any] | None = None, **kw: Any) -> GateOpened:
    values: dict[str, Any] = {
        "id": "i", "cascade_id": "c", "gate_id": "g", "kind": "permission", "trajectory_id": "t",
        "step_index": 3, "interaction": interaction, "request": request or {}, "scopes": ("once",),
        "permission": PermissionRequest(action="do", target="https://example.com/"), "digest": "d" * 32,
    }  # fmt: skip
    values.update(kw)
    return GateOpened(**values)


def sent(g: GateOpened, value: object) -> dict[str, Any]:
    payload = interaction_payload(g, parse_answer(g, value))
    assert (payload["trajectoryId"], payload["stepIndex"]) == ("t", 3)
    return {k: v for k, v in payload.items() if k not in ("trajectoryId", "stepIndex")}


def test_every_confirm_kind_is_in_the_table_with_confirm_as_its_answer() -> None:
    assert {k.field for k in KINDS if k.answer == "confirm"} == CONFIRM_KINDS
    assert len(CONFIRM_KINDS) == 12


@pytest.mark.parametrize("field", sorted(CONFIRM_KINDS))
def test_a_confirm_kind_sends_confirm_true_or_false_and_nothing_else(field: str) -> None:
    g = gate(field)
    assert sent(g, True) == {field: {"confirm": True}}
    for deny in DENIES:
        assert sent(g, deny) == {field: {"confirm": False}}
    with pytest.raises(AnswerError):  # its message carries no reason
        parse_answer(g, "no: because")


def test_a_deploy_deny_is_cancel_true_never_the_empty_message_that_proceeds() -> None:
    g = gate(
        "deploy",
        {"deployTargetOptions": [{"name": "site"}]},
        allow_label="Deploy",
        deny_label="Cancel the deploy",
    )
    assert sent(g, True) == {"deploy": {"cancel": False, "deployTarget": {"name": "site"}}}
    for deny in DENIES:
        message = sent(g, deny)["deploy"]
        assert message == {"cancel": True} and message != {}
    several = gate(
        "deploy",
        {"deployTargetOptions": [{"name": "a"}, {"name": "b"}]},
        no_allow="agy offers several deploy targets",
    )
    with pytest.raises(AnswerError, match="several deploy targets"):
        parse_answer(several, True)
    assert sent(several, False) == {"deploy": {"cancel": True}}


def test_a_file_permission_names_the_path_asked_in_allow_and_deny() -> None:
    g = gate(
        "filePermission",
        {"absolutePathUri": "file:///etc", "isDirectory": True},
        scopes=("once", "conversation"),
    )
    assert sent(g, True) == {
        "filePermission": {"allow": True, "scope": "PERMISSION_SCOPE_ONCE", "absolutePathUri": "file:///etc"}
    }
    assert sent(g, "allow conversation")["filePermission"]["scope"] == "PERMISSION_SCOPE_CONVERSATION"
    assert sent(g, False) == {"filePermission": {"allow": False, "absolutePathUri": "file:///etc"}}
    with pytest.raises(AnswerError):
        parse_answer(g, "allow always")  # not offered: never wider than the path


SCHEMA = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}, "pick": {"enum": ["a", "b"]},
                                                      "ok": {"type": "boolean"}}, "required": ["n"]})  # fmt: skip


def test_an_elicitation_takes_only_content_that_fits_what_it_asks() -> None:
    g = gate("elicitation", {"requestedSchemaJson": SCHEMA}, no_allow="it needs the content it asks for")
    assert sent(g, 'accept: {"n": 2, "pick": "b"}') == {
        "elicitation": {"action": "accept", "contentJson": '{"n":2,"pick":"b"}'}
    }
    assert (
        sent(g, GateAnswer(allow=True, content='{"n": 1, "ok": false}'))["elicitation"]["contentJson"]
        == '{"n":1,"ok":false}'
    )
    for bad in (True, "accept", '{"n": 1}', 'accept: {"n": "1"}', 'accept: {"n": true}', 'accept: {"pick": "a"}',
                'accept: {"n": 1, "pick": "c"}', 'accept: {"n": 1, "extra": 0}', "accept: [1]", "accept: {",
                'accept: {"n": 1, "ok": "yes"}', GateAnswer(allow=False, content='{"n": 1}')):  # fmt: skip
        with pytest.raises(AnswerError):
            parse_answer(g, bad)
    assert sent(g, "decline") == {"elicitation": {"action": "decline"}}
    assert sent(g, False) == {"elicitation": {"action": "decline"}}
    assert sent(g, "cancel") == {"elicitation": {"action": "cancel"}}
    assert sent(g, GateAnswer(action="cancel")) == {"elicitation": {"action": "cancel"}}
    plain = gate("elicitation", {"requestedSchemaJson": '{"type": "object", "properties": {}}'})
    assert sent(plain, "accept") == {"elicitation": {"action": "accept", "contentJson": "{}"}}


def test_content_and_the_sandbox_go_only_where_agys_message_has_them() -> None:
    browse = gate("openBrowserUrl")
    with pytest.raises(AnswerError):
        parse_answer(browse, GateAnswer(allow=True, content="{}"))
    with pytest.raises(AnswerError):
        parse_answer(browse, GateAnswer(allow=True, sandbox_override=True))
    run = gate(
        "runCommand",
        permission=PermissionRequest(action="command", target="ls", command_line="ls"),
        editable=True,
    )
    assert sent(run, True) == {
        "runCommand": {"confirm": True, "proposedCommandLine": "ls", "submittedCommandLine": "ls"}
    }
    assert sent(run, GateAnswer(allow=True, sandbox_override=True))["runCommand"]["sandboxOverride"] is True
    assert "sandboxOverride" not in sent(run, False)["runCommand"]


def test_a_request_with_no_subject_can_only_be_denied() -> None:
    g = gate("approvalInteraction", no_allow="agy does not say what it would act on")
    for allow in (True, "allow", GateAnswer(allow=True)):
        with pytest.raises(AnswerError, match="cannot be allowed from here"):
            parse_answer(g, allow)
    assert sent(g, False) == {"approvalInteraction": {"confirm": False}}


def test_a_rule_written_for_permissions_never_allows_a_newly_answerable_kind() -> None:
    from agy_harness.core.policy_match import gate_matches
    from agy_harness.core.policy_rules import Rule

    broad = Rule(id="r", decision="allow", kind=("permission",))
    assert gate_matches(broad, gate("permission"))
    assert not gate_matches(broad, gate("executeBrowserJavascript"))
    assert not gate_matches(broad, gate("deploy"))
    named = Rule(id="r", decision="allow", interaction=("readUrlContent",))
    assert gate_matches(named, gate("readUrlContent"))
    assert gate_matches(
        Rule(id="r", decision="deny", kind=("permission",)), gate("deploy")
    )  # a deny stays wide


def test_the_demos_auto_answers_never_allow_a_newly_answerable_kind() -> None:
    from agy_harness.composition.entrypoints.demo import auto_policy

    assert auto_policy(gate("deploy")).allow is False
    assert auto_policy(gate("executeBrowserJavascript")).allow is False
    command = PermissionRequest(action="command", target="ls", command_line="ls")
    assert auto_policy(gate("runCommand", permission=command)).allow is True
