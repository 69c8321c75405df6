"""agy's file-edit review as a gate (:mod:`agy_harness.core.code_review`): what its card carries, how
answers read, the ``AcknowledgeCodeActionStep`` body they become, and the digest that binds them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agy_harness.adapters.rpc.actions import code_review_request
from agy_harness.adapters.simulator import code_review as sim_review
from agy_harness.adapters.simulator import steps as st
from agy_harness.core import code_review
from agy_harness.core.answers import Allow, AnswerError, Deny, parse_answer
from agy_harness.core.binding import request_digest
from agy_harness.core.elicitation import interaction_payload
from agy_harness.core.gates import gate_events, pending_request
from agy_harness.core.kinds import describe
from agy_harness.core.steps import parse_step
from agy_harness.core.tui_keys import answer_keys
from agy_harness.ports.events import GateOpened

PATH = "/w/notes.txt"


def _raw(status: str = st.WAITING) -> dict[str, Any]:
    old, new = sim_review.contents("notes.txt")
    where = st.Where("c1", "t1", 3, 1, "exec-1")
    raw = sim_review.code_action(
        where, "m", sim_review.edit_call(PATH, old, new), path=PATH, old=old, new=new
    )
    raw["status"] = status
    return raw


def _gate(raw: dict[str, Any]) -> GateOpened:
    step = parse_step(raw)
    assert step is not None
    pending = pending_request(step)
    assert pending is not None
    digest = request_digest(step, *pending)
    (gate, *_notice) = gate_events(
        step, {"id": "g", "cascade_id": "c1", "step_key": "k"}, "gid", pending, digest
    )
    assert isinstance(gate, GateOpened)
    return gate


def test_a_waiting_unacknowledged_edit_is_a_permission_gate_showing_its_whole_diff() -> None:
    gate = _gate(_raw())
    assert (gate.kind, gate.interaction, gate.answerable) == ("permission", "codeAction", True)
    assert gate.permission is not None and (gate.permission.action, gate.permission.target) == ("edit", PATH)
    assert gate.request["diff"] == (
        " # notes.txt\n \n-The old line.\n+The new line.\n Kept as it is.\n+An added line."
    )
    assert gate.request["oldText"] == "# notes.txt\n\nThe old line.\nKept as it is."
    assert gate.request["newText"] == "# notes.txt\n\nThe new line.\nKept as it is.\nAn added line."
    assert describe(gate) == f"agy asks to edit {PATH} (accept or reject its diff)"


def test_no_gate_for_an_acknowledged_edit_a_settled_one_or_one_naming_no_file() -> None:
    acknowledged = _raw()
    acknowledged["codeAction"]["acknowledgementType"] = "ACKNOWLEDGEMENT_TYPE_ACCEPT"
    nameless = _raw()
    del nameless["codeAction"]["actionResult"]["edit"]["absoluteUri"]
    del nameless["codeAction"]["actionSpec"]["command"]["file"]
    for raw in (acknowledged, _raw(st.DONE), nameless):
        step = parse_step(raw)
        assert step is not None and pending_request(step) is None


@pytest.mark.parametrize(
    "line",
    [
        {"type": "SOMETHING_NEW", "text": "x"},
        {"text": "x"},
        {"type": "UNIFIED_DIFF_LINE_TYPE_INSERT", "text": "a\nb"},
    ],
    ids=["unknown type", "no type", "two lines in one"],
)
def test_a_diff_that_cannot_be_shown_exactly_is_answered_only_in_agys_terminal(line: dict[str, str]) -> None:
    raw = _raw()
    raw["codeAction"]["actionResult"]["edit"]["diff"]["unifiedDiff"]["lines"][2] = line
    gate = _gate(raw)
    assert (gate.kind, gate.answerable) == ("other", False)
    assert describe(gate).endswith("answer in agy's terminal")
    with pytest.raises(AnswerError):
        parse_answer(gate, True)


def test_a_blank_line_proto_json_leaves_without_text_is_shown_blank() -> None:
    lines = _raw()["codeAction"]["actionResult"]["edit"]["diff"]["unifiedDiff"]["lines"]
    assert lines[1] == {"type": "UNIFIED_DIFF_LINE_TYPE_UNCHANGED"}  # the simulator sends it as agy would
    gate = _gate(_raw())
    assert gate.answerable and gate.request["diff"].split("\n")[1] == " "  # (refused as unreadable before)


def test_accept_and_reject_with_written_feedback_are_the_descriptors_body() -> None:
    gate = _gate(_raw())
    info = [{"uriPath": PATH, "stepIndices": [3]}]
    accepted = parse_answer(gate, "allow")
    assert isinstance(accepted.verdict, Allow)
    assert interaction_payload(gate, accepted) == {
        "trajectoryId": "t1",
        "stepIndex": 3,
        "codeAction": {
            "accept": True,
            "acknowledgementScope": "CODE_ACKNOWLEDGEMENT_SCOPE_FILE",
            "codeAcknowledgementRequestInfos": info,
        },
    }
    rejected = parse_answer(gate, "deny: keep the old line")
    assert rejected.verdict == Deny("keep the old line")
    body = interaction_payload(gate, rejected)["codeAction"]
    assert body == {
        "accept": False,  # said, never left to proto-JSON's default
        "writtenFeedback": "keep the old line",
        "acknowledgementScope": "CODE_ACKNOWLEDGEMENT_SCOPE_FILE",
        "codeAcknowledgementRequestInfos": info,
    }
    # the RPC adapter sends it by AcknowledgeCodeActionStep, cascadeId added, nothing else
    assert code_review_request("c1", interaction_payload(gate, rejected)) == {"cascadeId": "c1", **body}
    assert code_review_request("c1", {"permission": {"allow": True}}) is None
    # agy's re-ask at another step index: the body names that step
    assert interaction_payload(gate, accepted, 9)["codeAction"]["codeAcknowledgementRequestInfos"][0][
        "stepIndices"
    ] == [9]


@pytest.mark.parametrize(
    "answer", [None, "", "maybe", "allow always", "allow conversation", "edit: rm -rf /", ["allow", "deny"]]
)
def test_anything_but_an_explicit_accept_or_reject_is_refused(answer: object) -> None:
    with pytest.raises(AnswerError):
        parse_answer(_gate(_raw()), answer)


def test_nothing_is_typed_into_agys_pane_for_a_review() -> None:
    gate = _gate(_raw())
    assert answer_keys(gate, parse_answer(gate, True)) is None
    assert answer_keys(gate, parse_answer(gate, False)) is None


def test_the_digest_covers_the_diff_and_not_the_projection() -> None:
    """The stream strips ``metadata.toolCall`` (the edit tool's name): the same review read from the
    stream and from a poll has one digest, or an answer read on the stream's card would be refused as
    "agy now asks something else" (it was, before the digest took the step type for a review's tool);
    a diff that changes changes it."""
    raw = _raw()
    gate = _gate(raw)
    assert _gate(st.stream_projection(raw)).digest == gate.digest
    other = copy.deepcopy(raw)
    other["codeAction"]["actionResult"]["edit"]["diff"]["unifiedDiff"]["lines"][3]["text"] = "The newer line."
    assert _gate(other).digest != gate.digest


def test_a_reviewed_edit_says_what_became_of_it() -> None:
    step = parse_step(
        {
            **_raw(st.DONE),
            "codeAction": {**_raw()["codeAction"], "acknowledgementType": "ACKNOWLEDGEMENT_TYPE_REJECT"},
        }
    )
    assert step is not None
    assert code_review.outcome(step) == (f"the edit of {PATH} was rejected", True)


def test_no_rule_accepts_a_review_a_deny_rule_still_rejects_it() -> None:
    """A rule never approves more than a human could have seen: a file-edit review's diff is seen by
    no rule, so an allow rule that would match it (its kind, its tool) leaves it to the human."""
    from agy_harness.core.policy_match import RuleSet, decide
    from agy_harness.core.policy_rules import Rule

    gate = _gate(_raw())
    for wide in ({"kind": ("permission",)}, {"interaction": ("codeAction",)}, {"tool": (gate.tool_name,)}):
        assert (
            decide(RuleSet(rules=(Rule(id="wide", decision="allow", **wide),)), gate, None).verdict == "ask"
        )
    deny = Rule(id="no-edits", decision="deny", interaction=("codeAction",))
    assert decide(RuleSet(rules=(deny,)), gate, None).verdict == "deny"
