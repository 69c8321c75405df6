"""Parse, don't validate: ``parse_answer`` returns a :class:`CheckedAnswer` bound to its gate, and the
payload builder and key typing take its verdict as it is (the fail-closed rules themselves are
tests/safety/test_fail_closed_answers.py's)."""

from __future__ import annotations

import pytest

from agy_harness.core.answers import (
    Allow,
    AnswerError,
    CheckedAnswer,
    Choose,
    Deny,
    Refuse,
    Response,
    parse_answer,
)
from agy_harness.core.elicitation import interaction_payload
from agy_harness.core.reconciler import Reconciler
from agy_harness.core.tui_keys import answer_keys, persist_keys
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .fixtures import CASCADE, fixture


def gate(name: str, index: int | None = None) -> GateOpened:
    step = fixture(name)
    if index is not None:
        step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = index
    [g] = [e for e in Reconciler(CASCADE).feed(step) if isinstance(e, GateOpened)]
    return g


PERMISSION = gate("run_command_waiting")
QUESTION = gate("ask_question_waiting")


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        (True, Allow()),
        ("yes", Allow()),
        (GateAnswer(allow=True, persist="session"), Allow("session")),
        ("no", Deny()),
        ("no: use make clean", Deny("use make clean")),
        ("cancel", Deny()),
        (False, Deny()),
    ],
)
def test_a_permission_answer_is_read_once_into_its_verdict(value: object, verdict: object) -> None:
    checked = parse_answer(PERMISSION, value)
    assert isinstance(checked, CheckedAnswer) and checked.verdict == verdict
    assert (checked.gate_id, checked.digest) == (PERMISSION.gate_id, PERMISSION.digest)
    assert checked.bound_to(PERMISSION)


def test_a_question_answer_carries_its_resolved_responses() -> None:
    q = QUESTION.questions[0]
    label = q.options[1].text
    checked = parse_answer(QUESTION, f"  {label.upper()} ")
    assert checked.verdict == Choose((Response(q.question, (q.options[1].id,), ""),))
    assert parse_answer(QUESTION, "my own idea").verdict == Choose((Response(q.question, (), "my own idea"),))
    assert parse_answer(QUESTION, "decline").verdict == Refuse("decline")


def test_the_payload_and_the_keys_come_from_the_verdict() -> None:
    allow = parse_answer(PERMISSION, "y")
    assert interaction_payload(PERMISSION, allow)["permission"] == {"allow": True}
    assert answer_keys(PERMISSION, allow) == ["1", "Enter"]
    why = parse_answer(PERMISSION, "no: not now")
    assert interaction_payload(PERMISSION, why)["permission"] == {
        "allow": False,
        "userDenyInstruction": "not now",
    }
    assert answer_keys(PERMISSION, why) is None  # a reason is text: RPC only
    always = parse_answer(PERMISSION, GateAnswer(allow=True, persist="always"))
    assert persist_keys(PERMISSION, always) == ["3", "Enter"]
    second = QUESTION.questions[0].options[1].id
    picked = parse_answer(QUESTION, second)
    assert interaction_payload(QUESTION, picked, 20)["askQuestion"]["responses"] == [
        {"question": QUESTION.questions[0].question, "selectedOptionIds": [second]}
    ]
    assert answer_keys(QUESTION, picked) == [second, "Enter"]


def test_a_checked_answer_is_not_read_again_and_is_never_carried_to_another_gate() -> None:
    checked = parse_answer(PERMISSION, "allow")
    assert parse_answer(PERMISSION, checked) is checked  # bound to this gate: taken as it is
    other = gate("run_command_waiting", index=PERMISSION.step_index + 5)
    with pytest.raises(AnswerError, match="another request"):
        parse_answer(other, checked)
    changed = PERMISSION.model_copy(update={"digest": "0" * 32})  # the same step asking something else
    with pytest.raises(AnswerError, match="another request"):
        parse_answer(changed, checked)


def test_an_edited_checked_answer_is_a_loose_one_again() -> None:
    denied = parse_answer(PERMISSION, "deny")
    edited = denied.model_copy(update={"deny_reason": "later"})
    assert type(edited) is GateAnswer  # never a checked answer whose verdict says something else
    assert parse_answer(PERMISSION, edited).verdict == Deny("later")


def test_it_reads_as_the_answer_it_was_read_from() -> None:
    assert parse_answer(PERMISSION, "cancel") == GateAnswer(action="cancel", allow=False)
    assert GateAnswer(action="cancel", allow=False) == parse_answer(PERMISSION, "cancel")
    assert parse_answer(PERMISSION, "allow") != GateAnswer(allow=False)


@pytest.mark.parametrize(
    ("gate_", "value", "why"),
    [
        (PERMISSION, GateAnswer(allow=False, persist="always"), "allow always applies only"),
        (QUESTION, GateAnswer(selections=(("1",),), persist="session"), "allow always applies only"),
        (PERMISSION, GateAnswer(allow=True, deny_reason="why"), "reason goes with a denial"),
    ],
)
def test_what_the_bridge_refused_at_delivery_is_refused_when_read(
    gate_: GateOpened, value: GateAnswer, why: str
) -> None:
    with pytest.raises(AnswerError, match=why):
        parse_answer(gate_, value)
