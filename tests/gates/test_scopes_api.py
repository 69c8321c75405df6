"""The gate API of issue 34 at the core: scopes and edits read by parse_answer (fail closed), and the
RPC payload each verdict becomes."""

from __future__ import annotations

from typing import Any

import pytest

from agy_harness.core.answers import Allow, AnswerError, parse_answer
from agy_harness.core.elicitation import interaction_payload
from agy_harness.core.gates import gate_events
from agy_harness.core.scopes import offered, scope_label
from agy_harness.core.steps import parse_step
from agy_harness.ports.events import GateOpened, PermissionRequest
from agy_harness.ports.protocols import GateAnswer


def gate(interaction: str = "permission", scopes: tuple[str, ...] = ("once", "conversation", "global"),
         editable: bool = False, request: dict[str, Any] | None = None, **perm: str) -> GateOpened:  # fmt: skip
    permission = PermissionRequest(
        action=perm.get("action", "command"),
        target=perm.get("target", "pwd"),
        command_line=perm.get("command_line", "pwd"),
        persist_suggestion_type="PERSIST_SUGGESTION_TYPE_SUGGESTED",
        suggested_persist_pattern=perm.get("pattern", "pwd"),
    )
    return GateOpened(id="c/3/gate", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t",
                      step_index=3, permission=permission, interaction=interaction, request=request or {},
                      digest="d" * 32, scopes=scopes, editable=editable)  # fmt: skip


@pytest.mark.parametrize(
    ("value", "scope"),
    [
        (GateAnswer(allow=True, scope="conversation"), "conversation"),
        (GateAnswer(allow=True, scope="global"), "global"),
        ("allow conversation", "conversation"),
        ("Allow  Always", "global"),
        ("allow global", "global"),
        ("allow once", None),
        ("allow", None),
        (GateAnswer(allow=True, scope="once"), None),
    ],
)
def test_a_listed_scope_is_read_with_an_allow(value: object, scope: str | None) -> None:
    assert parse_answer(gate(), value).verdict == Allow(scope=scope)


@pytest.mark.parametrize(
    "value",
    [
        GateAnswer(allow=True, scope="workspace"),  # not listed
        GateAnswer(allow=True, scope="project"),
        "allow workspace",
        "allow project",
        GateAnswer(allow=False, scope="conversation"),  # a scope with a denial
        GateAnswer(action="decline", scope="conversation"),
        GateAnswer(allow=True, scope="conversation", persist="session"),  # two routes at once
        GateAnswer(allow=True, edited_command="ls"),  # not editable
        "edit: ls",
        "allow forever",
    ],
)
def test_a_scope_not_listed_or_without_an_allow_is_refused(value: object) -> None:
    with pytest.raises(AnswerError):
        parse_answer(gate(), value)


def test_a_gate_that_lists_only_once_refuses_every_lasting_scope() -> None:
    for scope in ("conversation", "workspace", "project", "global"):
        with pytest.raises(AnswerError):
            parse_answer(gate(scopes=("once",)), GateAnswer(allow=True, scope=scope))  # type: ignore[arg-type]


def test_the_payload_carries_agys_permission_scope() -> None:
    g = gate()
    assert interaction_payload(g, parse_answer(g, "allow conversation"))["permission"] == {
        "allow": True,
        "scope": "PERMISSION_SCOPE_CONVERSATION",
    }
    assert interaction_payload(g, parse_answer(g, "allow always"))["permission"] == {
        "allow": True,
        "scope": "PERMISSION_SCOPE_GLOBAL",
    }
    # once stays what agy's CLI recorded ({allow: true}); a denial never carries a scope
    assert interaction_payload(g, parse_answer(g, "allow"))["permission"] == {"allow": True}
    assert interaction_payload(g, parse_answer(g, "no: not now"))["permission"] == {
        "allow": False,
        "userDenyInstruction": "not now",
    }


def test_an_edited_command_runs_and_binds_its_own_digest() -> None:
    g = gate("runCommand", scopes=("once",), editable=True, command_line="rm -rf build")
    checked = parse_answer(g, "edit: rm -rf build/tmp")
    assert checked.verdict == Allow(command="rm -rf build/tmp")
    assert interaction_payload(g, checked)["runCommand"] == {
        "confirm": True,
        "proposedCommandLine": "rm -rf build",
        "submittedCommandLine": "rm -rf build/tmp",
    }
    other = parse_answer(g, GateAnswer(allow=True, edited_command="rm -rf build/other"))
    assert checked.command_digest and other.command_digest and checked.command_digest != other.command_digest
    plain = parse_answer(g, True)
    assert plain.command_digest == ""
    assert interaction_payload(g, plain)["runCommand"]["submittedCommandLine"] == "rm -rf build"
    denied = parse_answer(g, False)
    assert interaction_payload(g, denied)["runCommand"] == {
        "confirm": False,
        "proposedCommandLine": "rm -rf build",
    }
    with pytest.raises(AnswerError):  # agy's runCommand answer has no reason field
        parse_answer(g, "no: use make clean")
    with pytest.raises(AnswerError):
        parse_answer(g, GateAnswer(allow=True, edited_command="   "))
    with pytest.raises(AnswerError):
        parse_answer(g, GateAnswer(allow=False, edited_command="ls"))


def test_a_file_permission_offers_once_and_the_conversation_for_its_one_path() -> None:
    """filePermission's answer message is the IDE descriptors' ``{allow, scope, absolutePathUri}``
    (issue 45): a grant for once or for the conversation, of the path the card shows; never wider."""
    assert offered("filePermission", {"absolutePathUri": "file:///etc"}) == ("once", "conversation")
    g = gate("filePermission", request={"absolutePathUri": "file:///etc"}).model_copy(
        update={"scopes": ("once", "conversation")}
    )
    for value in ("allow always", "allow workspace", "deny: why", GateAnswer(allow=True, scope="global")):
        with pytest.raises(AnswerError):
            parse_answer(g, value)


def test_questions_take_no_scope_and_no_edit() -> None:
    from agy_harness.ports.events import Question, QuestionOption

    q = GateOpened(id="i", cascade_id="c", gate_id="q", kind="question", trajectory_id="t", step_index=1,
                   questions=(Question(question="Which?", options=(QuestionOption(id="1", text="A"),)),))  # fmt: skip
    for answer in (
        GateAnswer(selections=(("1",),), scope="conversation"),
        GateAnswer(selections=(("1",),), edited_command="x"),
    ):
        with pytest.raises(AnswerError):
            parse_answer(q, answer)


def test_which_scopes_a_request_offers() -> None:
    suggested = {
        "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
        "suggestedPersistPattern": "pwd",
    }
    assert offered("permission", suggested) == ("once", "conversation", "global")
    # without agy's pattern no lasting grant shows its breadth: agy's own menu downgrades it to once
    assert offered("permission", {}) == ("once",)
    assert offered("permission", {"resource": {"action": "command", "target": "ls"}}) == ("once",)
    assert offered("permission", {**suggested, "suggestedPersistPattern": ""}) == ("once",)
    assert offered("permission", {"suggestedPersistPattern": "pwd"}) == ("once",)  # not SUGGESTED
    assert offered("permission", {**suggested, "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_NONE"}) == (
        "once",
    )
    assert offered("filePermission", {}) == ("once", "conversation")
    assert offered("runCommand", {}) == ("once",)
    assert offered("openBrowserUrl", {}) == ("once",)  # {confirm}: a one-time allow (issue 45)
    assert offered("artifactReviewPolicy", {}) == ()


def test_labels_name_the_scope_and_agys_pattern_verbatim() -> None:
    g = gate(pattern="git\u202e")
    assert scope_label(g, "once") == "Allow once"
    assert (
        scope_label(g, "conversation") == "Allow for this conversation: commands that start with 'git\\u202e'"
    )
    assert scope_label(g, "global") == "Always allow: commands that start with 'git\\u202e'"
    assert scope_label(gate("runCommand"), "conversation") == "Allow for this conversation"
    assert scope_label(g, "workspace").startswith("Allow in this workspace")
    assert scope_label(g, "project").startswith("Allow in this project")


def test_the_recorded_run_command_gate_offers_agys_three_allows() -> None:
    import json
    from pathlib import Path

    import agy_harness.adapters.simulator as simulator

    raw = json.loads((Path(simulator.__file__).parent / "shapes" / "run_command_waiting.json").read_text())
    step = parse_step(raw)
    assert step is not None
    from agy_harness.core.gates import pending_request

    pending = pending_request(step)
    assert pending is not None
    [opened] = gate_events(step, {"id": "x", "cascade_id": "c"}, "g", pending, "d" * 32)
    assert isinstance(opened, GateOpened)
    assert opened.scopes == ("once", "conversation", "global") and not opened.editable


def test_a_permission_without_agys_pattern_offers_only_once() -> None:
    """agy's own menu offers a lasting allow only where it suggests a pattern (omnigent 0.19.1's
    ``to_tui_selection_keys`` downgrades "always" to once without one): a permission step without a
    pattern opens a gate offering ``once`` alone, and a lasting scope for it is refused."""
    raw = {
        "type": "CORTEX_STEP_TYPE_GENERIC",
        "status": "CORTEX_STEP_STATUS_WAITING",
        "metadata": {"sourceTrajectoryStepInfo": {"trajectoryId": "t", "stepIndex": 3}, "executionId": "e"},
        "requestedInteraction": {"permission": {"resource": {"action": "read", "target": "/etc/hosts"}}},
    }
    step = parse_step(raw)
    assert step is not None
    from agy_harness.core.gates import pending_request

    pending = pending_request(step)
    assert pending is not None
    [opened] = gate_events(step, {"id": "x", "cascade_id": "c"}, "g", pending, "d" * 32)
    assert isinstance(opened, GateOpened) and opened.scopes == ("once",)
    for value in ("allow conversation", "allow always", GateAnswer(allow=True, scope="conversation")):
        with pytest.raises(AnswerError):
            parse_answer(opened, value)
    assert interaction_payload(opened, parse_answer(opened, "allow"))["permission"] == {"allow": True}
