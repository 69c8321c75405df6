"""Finding 1: an answer approves a permission only when it explicitly allows; ambiguous answers are
refused with a clear ValueError and nothing reaches agy; question answers are never sent empty."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import Session, open_session
from agy_harness.core.answers import ALLOW_WORDS, DENY_WORDS, AnswerError, check_answer, parse_answer
from agy_harness.core.elicitation import interaction_payload
from agy_harness.ports.events import Event, GateOpened, PermissionRequest, Question, QuestionOption
from agy_harness.ports.protocols import GateAnswer
from tests.integration.helpers import FAST

PERMISSION = GateOpened(
    id="t/3/gate",
    cascade_id="c",
    gate_id="t/3",
    kind="permission",
    trajectory_id="t",
    step_index=3,
    permission=PermissionRequest(action="run", command_line="rm -rf ~/work"),
)
SINGLE = Question(
    question="Which?", options=(QuestionOption(id="1", text="Backend"), QuestionOption(id="2", text="UI"))
)
MULTI = SINGLE.model_copy(update={"multi_select": True})


def question_gate(*questions: Question) -> GateOpened:
    return PERMISSION.model_copy(update={"kind": "question", "permission": None, "questions": questions})


@pytest.mark.parametrize("value", [*sorted(DENY_WORDS), " NO ", "Denied", False, ["deny"]])
def test_deny_words_deny(value: Any) -> None:
    answer = parse_answer(PERMISSION, value)
    assert interaction_payload(PERMISSION, answer)["permission"] == {"allow": False}


@pytest.mark.parametrize("value", [True, *sorted(ALLOW_WORDS), "Y", " Approve ", GateAnswer(allow=True)])
def test_only_explicit_allows_allow(value: Any) -> None:
    assert interaction_payload(PERMISSION, parse_answer(PERMISSION, value))["permission"] == {"allow": True}


def test_the_readme_lists_exactly_the_words_that_allow_and_deny() -> None:
    """The permission bullet of docs/python-api.md is the user's list of what allows: no word allows
    that it does not name, and the error message lists the same words."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "python-api.md").read_text(encoding="utf-8")
    bullet = readme[readme.index("- for a permission: only") :]
    allow_part, deny_part = bullet[: bullet.index(" allow (")], bullet[: bullet.index(" deny;")]
    quoted = re.compile(r'`"(\w+)"`')
    allows = set(quoted.findall(allow_part))
    assert allows == ALLOW_WORDS
    assert set(quoted.findall(deny_part)) - allows == DENY_WORDS
    with pytest.raises(AnswerError) as refused:
        parse_answer(PERMISSION, "maybe")
    assert all(repr(word) in str(refused.value) for word in ALLOW_WORDS | DENY_WORDS)


@pytest.mark.parametrize(
    "value",
    [
        [],
        "",
        "maybe",
        "1",
        None,
        1,
        0,
        [["1"]],
        ["yes", "no"],
        GateAnswer(),
        GateAnswer(selections=(("1",),)),
    ],
)
def test_anything_else_is_refused_with_the_accepted_forms(value: Any) -> None:
    with pytest.raises(ValueError, match="accepted: True / 'allow'"):
        parse_answer(PERMISSION, value)


def test_a_permission_payload_never_allows_without_an_explicit_allow() -> None:
    for answer in (GateAnswer(), GateAnswer(action="decline", allow=True), GateAnswer(action="cancel")):
        assert interaction_payload(PERMISSION, answer)["permission"] == {"allow": False}


@pytest.mark.parametrize(
    ("gate", "value", "why"),
    [
        (question_gate(SINGLE), "", "no answer"),
        (question_gate(SINGLE), [], "no answer"),
        (question_gate(SINGLE), "  ", "no answer"),
        (question_gate(SINGLE), True, "which option"),
        (question_gate(SINGLE), "7", "is no option"),
        (question_gate(SINGLE), ["1", "2"], "takes one answer"),
        (question_gate(SINGLE, MULTI), ["1"], "no answer for"),
        (question_gate(SINGLE), [["1"], ["2"]], "answers for 1 question"),
        (question_gate(SINGLE), 3, "cannot read"),
        (question_gate(SINGLE), [None], "expected text"),
        (question_gate(SINGLE), GateAnswer(selections=((),)), "no answer"),
    ],
)
def test_question_answers_that_match_nothing_are_refused(gate: GateOpened, value: Any, why: str) -> None:
    with pytest.raises(AnswerError, match=why):
        parse_answer(gate, value)
    if isinstance(value, GateAnswer):  # the payload builder refuses too: never sent empty
        with pytest.raises(AnswerError):
            interaction_payload(gate, value)


def test_question_forms_that_stay_accepted() -> None:
    gate = question_gate(SINGLE, MULTI)
    answer = parse_answer(gate, [["ui"], ["1", "Backend", "also docs"]])
    assert interaction_payload(gate, answer)["askQuestion"]["responses"] == [
        {"question": "Which?", "selectedOptionIds": ["2"]},
        {"question": "Which?", "selectedOptionIds": ["1"], "writeInResponse": "also docs"},
    ]
    assert parse_answer(question_gate(SINGLE), "a write-in").selections == (("a write-in",),)
    assert parse_answer(question_gate(SINGLE), "decline").action == "decline"
    assert parse_answer(question_gate(SINGLE), False).action == "decline"
    assert parse_answer(PERMISSION, "cancel") == GateAnswer(action="cancel", allow=False)


async def _gate(s: Session, events: list[Event]) -> GateOpened:
    async for event in s.events():
        events.append(event)
        if isinstance(event, GateOpened):
            return event
    raise AssertionError("no gate")


async def _until_idle(s: Session, events: list[Event]) -> None:
    async for event in s.events():
        events.append(event)
        if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
            return


def _run_command_ran(sim: Simulator) -> list[bool]:
    return [
        s["status"] == "CORTEX_STEP_STATUS_DONE"
        for s in sim.steps()
        if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
    ]


@pytest.mark.parametrize("word", ["no", "deny", "false", "n"])
async def test_saying_no_through_the_public_api_never_runs_the_command(sim: Simulator, word: str) -> None:
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s:
        await s.send("run: rm -rf build")
        events: list[Event] = []
        gate = await _gate(s, events)
        for bad in ([], "maybe", None):
            with pytest.raises(ValueError, match="accepted"):
                await s.answer(gate.gate_id, bad)  # type: ignore[arg-type]
        await asyncio.sleep(0.2)
        assert _run_command_ran(sim) == [False]  # still parked: nothing was sent
        await s.answer(gate.gate_id, word)
        await asyncio.wait_for(_until_idle(s, events), 15)
    assert _run_command_ran(sim) == [False]
    [result] = [e for e in events if e.type == "tool_result"]
    assert result.is_error and "permission denied" in result.output  # type: ignore[union-attr]


async def test_an_empty_question_answer_is_refused_and_nothing_is_sent(sim: Simulator) -> None:
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s:
        await s.send("ask: which part should we work on first?")
        events: list[Event] = []
        gate = await _gate(s, events)
        for bad in ("", [], True, "99"):
            with pytest.raises(ValueError):
                await s.answer(gate.gate_id, bad)  # type: ignore[arg-type]
        [step] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION"]
        assert step["status"] == "CORTEX_STEP_STATUS_WAITING"
        await s.answer(gate.gate_id, "1")
        await asyncio.wait_for(_until_idle(s, events), 15)
    [step] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION"]
    [response] = step["completedInteractions"][0]["response"]["askQuestion"]["responses"]
    assert response["selectedOptionIds"] == ["1"]


@pytest.mark.parametrize("answer", [GateAnswer(allow=True), GateAnswer(action="decline"), GateAnswer()])
def test_a_gate_no_payload_answers_takes_no_answer(answer: GateAnswer) -> None:
    other = PERMISSION.model_copy(update={"kind": "other", "answerable": False, "permission": None})
    with pytest.raises(AnswerError, match="own terminal"):
        check_answer(other, answer)
