"""The elicitation policy: a human's answer to a gate -> agy's ``interaction`` payload, and where to
deliver it when agy has moved on (gate timed out and re-asked at a higher stepIndex).

Pure: the bridge in composition/ does the I/O (re-read steps, deliver, re-ask the human).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from . import steps as S
from .answers import check_answer, resolve_question

log = logging.getLogger("agy_harness.core.elicitation")


def question_responses(gate: GateOpened, answer: GateAnswer) -> list[dict[str, Any]]:
    """``askQuestion.responses``: one per question, the question text verbatim.

    Choices that match no option become the write-in; a decline or cancel sends no responses. An
    answer that leaves a question unanswered or ambiguous raises :class:`AnswerError` (never sent
    empty): see :mod:`agy_harness.core.answers`.
    """
    if answer.action != "accept":
        return []
    check_answer(gate, answer)
    responses: list[dict[str, Any]] = []
    for i, question in enumerate(gate.questions):
        choices = answer.selections[i] if i < len(answer.selections) else ()
        write_in = answer.write_ins[i] if i < len(answer.write_ins) else ""
        ids, text = resolve_question(question, choices, write_in)
        response: dict[str, Any] = {"question": question.question, "selectedOptionIds": ids}
        if text:
            response["writeInResponse"] = text
        responses.append(response)
    return responses


def permission_allowed(answer: GateAnswer) -> bool:
    """Only an explicit allow approves: ``action`` accept with ``allow`` True. Everything else denies."""
    return answer.action == "accept" and answer.allow is True


def interaction_payload(
    gate: GateOpened, answer: GateAnswer, step_index: int | None = None
) -> dict[str, Any]:
    """The ``interaction`` object of HandleCascadeUserInteraction, for ``gate`` (or its retry step)."""
    payload: dict[str, Any] = {
        "trajectoryId": gate.trajectory_id,
        "stepIndex": gate.step_index if step_index is None else step_index,
    }
    if gate.kind == "question":
        payload["askQuestion"] = {"responses": question_responses(gate, answer)}
    else:
        payload["permission"] = {"allow": permission_allowed(answer)}
    return payload


def _signature_of_request(kind: str, request: dict[str, Any]) -> tuple[Any, ...]:
    if kind == "permission":
        resource = S.as_dict(request.get("resource"))
        return ("permission", S.as_str(resource.get("action")), S.as_str(resource.get("target")))
    questions = []
    for q in map(S.as_dict, S.as_list(request.get("questions"))):
        options = tuple(S.as_str(S.as_dict(o).get("text")) for o in S.as_list(q.get("options")))
        questions.append((S.as_str(q.get("question")), options))
    return ("question", tuple(questions))


def gate_signature(gate: GateOpened) -> tuple[Any, ...]:
    """What the gate asks, independent of its step: agy's retry of the same gate has the same signature."""
    if gate.kind == "permission":
        p = gate.permission
        return ("permission", p.action if p else "", p.target if p else "")
    return ("question", tuple((q.question, tuple(o.text for o in q.options)) for q in gate.questions))


@dataclass(frozen=True, slots=True)
class Target:
    step_index: int
    moved: bool  # True when the surfaced step is gone and this is agy's retry of the same gate


def delivery_target(gate: GateOpened, raws: list[Any]) -> Target | None:
    """Where an answer to ``gate`` goes, judged on freshly read steps.

    The surfaced step if it is still WAITING; else the newest WAITING step of the same kind in the
    same trajectory asking the same thing (agy re-asked after a timeout); else ``None`` (answered
    elsewhere, or gone). A retry that asks something else (another command) is never a target: an
    answer is only ever delivered to the question the human saw.
    """
    signature = gate_signature(gate)
    newest: int | None = None
    for raw in raws:
        step = S.parse_step(raw)
        if step is None or step.key.trajectory_id != gate.trajectory_id:
            continue
        pending = S.waiting_interaction(step)
        if pending is None or pending[0] != gate.kind:
            continue
        if step.key.step_index == gate.step_index:
            return Target(gate.step_index, moved=False)
        newer = step.key.step_index > gate.step_index and (newest is None or step.key.step_index > newest)
        if newer and _signature_of_request(*pending) == signature:
            newest = step.key.step_index
    return Target(newest, moved=True) if newest is not None else None


def with_poll_details(gate: GateOpened, raws: list[Any]) -> GateOpened:
    """The gate with what only the poll projection carries: per-question multi-select flags from
    ``metadata.toolCall.argumentsJson``, which the stream strips. Identity is untouched."""
    if gate.kind != "question":
        return gate
    for raw in raws:
        step = S.parse_step(raw)
        if step is None or (step.key.trajectory_id, step.key.step_index) != (
            gate.trajectory_id,
            gate.step_index,
        ):
            continue
        flags = S.multi_select_flags(step)
        if not flags:
            return gate
        questions = tuple(
            q.model_copy(update={"multi_select": flags[i]}) if i < len(flags) else q
            for i, q in enumerate(gate.questions)
        )
        return gate.model_copy(update={"questions": questions})
    return gate


Rejection = Literal["stale", "shape", "gone"]


def classify_rejection(gate: GateOpened, step_index: int, raws: list[Any]) -> Rejection:
    """agy's 500 "input not registered for step N" means a stale step OR a payload of the wrong shape.

    Read the step's status to tell: still WAITING means agy refused the shape (report, do not loop);
    ERROR (timed out) or a newer WAITING retry means it was stale; anything else means it is gone.
    """
    status = ""
    for raw in raws:
        step = S.parse_step(raw)
        if step and step.key.trajectory_id == gate.trajectory_id and step.key.step_index == step_index:
            status = step.status
    if status == "WAITING":
        return "shape"
    target = delivery_target(gate, raws)
    if status == "ERROR" or (target is not None and target.step_index != step_index):
        return "stale"
    return "gone"


def rejection_is_transient(status: int, code: str, message: str) -> bool:
    """Whether agy's refusal of an answer is worth retrying as long as the step waits.

    agy overloads HTTP 500 "input not registered for step N" for a stale step AND a payload of the
    wrong shape: that one is told apart by re-reading the step (:func:`classify_rejection`), never
    retried blind. Any other 5xx, a timeout/unavailable/overload code, or no status at all (the
    connection broke) is transient. A 4xx other than 408/429 is agy saying the request is wrong:
    final.
    """
    if "input not registered" in message.lower():
        return False
    if code in ("unavailable", "deadline_exceeded", "resource_exhausted", "aborted"):
        return True
    return status == 0 or status >= 500 or status in (408, 429)


def freshest_open(gate: GateOpened, open_gates: list[GateOpened]) -> Target | None:
    """Where to deliver when agy cannot be re-read: the freshest gate the stream still shows open
    (not withdrawn) in the same trajectory asking the same thing, at or after ``gate``'s step."""
    signature = gate_signature(gate)
    best: int | None = None
    for other in open_gates:
        if (
            other.trajectory_id == gate.trajectory_id
            and other.kind == gate.kind
            and other.step_index >= gate.step_index
            and gate_signature(other) == signature
            and (best is None or other.step_index > best)
        ):
            best = other.step_index
    return Target(best, moved=best != gate.step_index) if best is not None else None
