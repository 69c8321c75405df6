"""The elicitation policy and rotation rules (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agy_harness.core.answers import AnswerError
from agy_harness.core.elicitation import (
    Refused,
    Target,
    classify_rejection,
    delivery_target,
    interaction_payload,
)
from agy_harness.core.reconciler import MapperState, Reconciler
from agy_harness.core.rotation import is_child, parse_time, rotated_state, rotation_target
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import CascadeSummary, GateAnswer

from .fixtures import CASCADE, TRAJ, fixture


def gate_of(name: str, **edit: Any) -> GateOpened:
    step = fixture(name)
    for k, v in edit.items():
        step["metadata"]["sourceTrajectoryStepInfo"][k] = v
    [gate] = [e for e in Reconciler(CASCADE).feed(step) if isinstance(e, GateOpened)]
    return gate


Q = "What type of project or improvement would you like to focus on?"


def test_question_answer_by_id_and_by_label_and_write_in() -> None:
    gate = gate_of("ask_question_waiting")
    by_id = interaction_payload(gate, GateAnswer(selections=(("4",),)))
    assert by_id == {
        "trajectoryId": TRAJ,
        "stepIndex": 12,
        "askQuestion": {"responses": [{"question": Q, "selectedOptionIds": ["4"]}]},
    }
    label = "build a command-line interface (CLI)   tool or helper script."
    by_label = interaction_payload(gate, GateAnswer(selections=((label,),)))
    assert by_label["askQuestion"]["responses"][0]["selectedOptionIds"] == ["2"]
    write_in = interaction_payload(gate, GateAnswer(selections=(("Something else entirely",),)))
    assert write_in["askQuestion"]["responses"] == [
        {"question": Q, "selectedOptionIds": [], "writeInResponse": "Something else entirely"}
    ]


def test_single_select_refuses_several_multi_select_keeps_all() -> None:
    gate = gate_of("ask_question_waiting")
    with pytest.raises(AnswerError, match="takes one answer"):
        interaction_payload(gate, GateAnswer(selections=(("1", "3"),)))
    multi = gate.model_copy(
        update={"questions": (gate.questions[0].model_copy(update={"multi_select": True}),)}
    )
    both = interaction_payload(multi, GateAnswer(selections=(("1", "3", "1"),), write_ins=("and tests",)))
    assert both["askQuestion"]["responses"][0] == {
        "question": Q,
        "selectedOptionIds": ["1", "3"],
        "writeInResponse": "and tests",
    }


def test_decline_or_cancel_sends_empty_responses_or_deny() -> None:
    gate = gate_of("ask_question_waiting")
    for action in ("decline", "cancel"):
        assert interaction_payload(gate, GateAnswer(action=action))["askQuestion"] == {"responses": []}  # type: ignore[arg-type]
    perm = gate_of("run_command_waiting")
    assert interaction_payload(perm, GateAnswer())["permission"] == {"allow": False}  # no explicit allow
    assert interaction_payload(perm, GateAnswer(allow=True))["permission"] == {"allow": True}
    assert interaction_payload(perm, GateAnswer(allow=False))["permission"] == {"allow": False}
    assert interaction_payload(perm, GateAnswer(action="decline", allow=True))["permission"] == {
        "allow": False
    }
    assert interaction_payload(perm, GateAnswer(), step_index=9)["stepIndex"] == 9


def _retry(index: int, status: str = "CORTEX_STEP_STATUS_WAITING") -> dict[str, Any]:
    step = fixture("run_command_waiting")
    step["status"] = status
    step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = index
    return step


def test_delivery_target_is_the_step_itself_or_agys_timeout_re_ask_of_the_same_request() -> None:
    gate = gate_of("run_command_waiting")
    assert delivery_target(gate, [fixture("run_command_waiting")]) == Target(6, moved=False)
    error = fixture("run_command_error")  # timed out: ERROR, no answer recorded
    assert delivery_target(gate, [error, _retry(8)]) == Target(8, moved=True)
    # through a chain of re-asks that timed out too
    timed_out = _retry(8, "CORTEX_STEP_STATUS_ERROR")
    assert delivery_target(gate, [error, timed_out, _retry(10)]) == Target(10, moved=True)
    done = delivery_target(gate, [fixture("run_command_done")])
    assert isinstance(done, Refused) and done.reason == "closed"
    # a WAITING question is not where a permission answer goes; nor an older step; nor another trajectory
    other = _retry(11)
    other["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"] = "other"
    missed = delivery_target(gate, [error, _retry(4), other, fixture("ask_question_waiting")])
    assert isinstance(missed, Refused) and missed.reason == "elsewhere"  # agy waits on a question now


def test_a_gate_answered_or_denied_in_agy_is_closed_even_if_agy_asks_the_same_again() -> None:
    gate = gate_of("run_command_waiting")
    denied = fixture("run_command_error")
    denied["completedInteractions"] = [{"response": {"permission": {}}}]  # denied in agy's terminal
    for first in (denied, fixture("run_command_done")):
        refused = delivery_target(gate, [first, _retry(8)])
        assert isinstance(refused, Refused) and refused.reason == "closed"
    # a re-ask that was itself answered ends the chain
    answered = _retry(8, "CORTEX_STEP_STATUS_DONE")
    refused = delivery_target(gate, [fixture("run_command_error"), answered, _retry(10)])
    assert isinstance(refused, Refused) and refused.reason == "closed"


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s["requestedInteraction"]["permission"]["resource"].update(target="rm -rf /"),
        lambda s: s["runCommand"].update(cwd="/home/someone"),
        lambda s: s["runCommand"].update(commandLine="pwd; rm -rf ~"),
        lambda s: s["metadata"].update(executionId="another-turn"),
        lambda s: s["requestedInteraction"]["permission"].update(suggestedPersistPattern="*"),
    ],
    ids=["target", "cwd", "final-command", "turn", "persist-pattern"],
)
def test_a_re_ask_or_the_step_itself_asking_something_else_is_refused(edit: Any) -> None:
    gate = gate_of("run_command_waiting")
    other = _retry(8)
    edit(other)
    refused = delivery_target(gate, [fixture("run_command_error"), other])
    assert isinstance(refused, Refused) and refused.reason == "elsewhere"
    assert "agy is now asking something else" in refused.detail
    changed = fixture("run_command_waiting")
    edit(changed)
    refused = delivery_target(gate, [changed])
    assert isinstance(refused, Refused) and refused.reason == "elsewhere"


def test_a_question_re_ask_must_ask_the_identical_question() -> None:
    question = gate_of("ask_question_waiting")
    asked = fixture("ask_question_waiting")
    asked["status"] = "CORTEX_STEP_STATUS_ERROR"
    retry = fixture("ask_question_waiting")
    retry["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 14
    assert delivery_target(question, [asked, retry]) == Target(14, moved=True)
    retry["requestedInteraction"]["askQuestion"]["questions"][0]["options"][0]["text"] = "Delete it all"
    assert isinstance(delivery_target(question, [asked, retry]), Refused)


def test_rejection_is_told_apart_by_the_steps_status() -> None:
    gate = gate_of("run_command_waiting")
    assert classify_rejection(gate, 6, [fixture("run_command_waiting")]) == "shape"
    assert classify_rejection(gate, 6, [fixture("run_command_error"), _retry(8)]) == "stale"
    assert classify_rejection(gate, 6, [fixture("run_command_error")]) == "stale"
    assert classify_rejection(gate, 6, [fixture("run_command_done")]) == "gone"


def s(cid: str, when: str = "", **kw: Any) -> CascadeSummary:
    return CascadeSummary(cascade_id=cid, last_user_input_time=when, **kw)


def test_rotation_rules() -> None:
    bound = s("A", "2026-08-02T04:49:09.337765093Z", step_count=9)
    assert rotation_target("A", [bound]) is None
    assert rotation_target("A", [bound, s("B", "2026-08-02T04:50:00.1Z")]) == "B"
    assert rotation_target("A", [bound, s("B", "2026-08-02T04:40:00Z")]) is None  # older activity
    assert rotation_target("A", [bound, s("N")]) is None  # minted, never used
    child = s("C", "2026-08-02T05:00:00Z", parent_id="A")
    assert is_child(child) and rotation_target("A", [bound, child]) is None
    rooted = s("R", "2026-08-02T05:00:00Z", root_id="A")
    assert rotation_target("A", [bound, rooted]) is None
    two_new = [bound, s("B", "2026-08-02T05:00:00Z"), s("D", "2026-08-02T06:00:00Z")]
    assert rotation_target("A", two_new) is None  # two fresh conversations: somebody else's, never a guess
    assert rotation_target("A", two_new, claimed={"B"}) == "D"  # B is another session's
    assert rotation_target("A", two_new, known={"B"}, claimed={"D"}) is None
    assert rotation_target("A", [s("B", "2026-08-02T05:00:00Z")]) is None  # bound not listed: never guess
    assert parse_time("2026-08-02T04:49:09.337765093Z") < parse_time("2026-08-02T04:49:09.337766Z")
    assert parse_time("garbage").year == 1970


def test_rotated_state_carries_usage_and_model_only() -> None:
    old = MapperState(
        committed={"x"}, input_tokens=5, output_tokens=6, cache_read_tokens=7, model="M", status="running"
    )
    new = rotated_state(old)
    assert (
        new.committed,
        new.status,
        new.input_tokens,
        new.output_tokens,
        new.cache_read_tokens,
        new.model,
    ) == (set(), None, 5, 6, 7, "M")


def test_poll_details_restore_the_multi_select_flag_the_stream_strips() -> None:
    from agy_harness.core.elicitation import with_poll_details

    stream = fixture("ask_question_waiting")
    del stream["metadata"]["toolCall"]  # the stream projection
    [gate] = [e for e in Reconciler(CASCADE).feed(stream) if isinstance(e, GateOpened)]
    assert gate.questions[0].multi_select is False
    poll = fixture("ask_question_waiting")
    args = json.loads(poll["metadata"]["toolCall"]["argumentsJson"])
    args["questions"][0]["is_multi_select"] = True
    poll["metadata"]["toolCall"]["argumentsJson"] = json.dumps(args)
    enriched = with_poll_details(gate, [fixture("run_command_waiting"), poll])
    assert enriched.questions[0].multi_select is True and enriched.id == gate.id
    assert with_poll_details(gate, [stream]) == gate


def test_other_conversations_that_existed_at_bind_time_are_never_a_rotation() -> None:
    bound = s("A", "2026-08-02T04:00:00Z")
    other = s("O", "2026-08-02T05:00:00Z")  # another conversation of the same language server
    assert rotation_target("A", [bound, other]) == "O"
    assert rotation_target("A", [bound, other], known={"O"}) is None
    cleared = s("N", "2026-08-02T06:00:00Z")  # minted by /clear after we bound, then typed into
    assert rotation_target("A", [bound, other, cleared], known={"O"}) == "N"
