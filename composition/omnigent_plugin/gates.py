"""agy's gates as omnigent elicitations, and omnigent's replies as checked answers (fail closed).

Pure (no omnigent import): :func:`elicitation_params` builds the ``params`` of omnigent's
``response.elicitation_request`` as a plain dict, in the shapes omnigent's web UI renders for agy
(the same extras as omnigent's own ``antigravity-native`` harness):

* a permission: the approve/reject card, ``message`` "Antigravity wants to run: <command>", plus
  ``command``, ``cwd``, ``action_description``;
* a question: ``ask_user_question = {questions: [{id: "0", question, options: [{label}],
  multiSelect}]}``, the web UI's question form (radios, checkboxes for a multi-select, and its
  free-text "other" answer, which we send to agy as the write-in).

:func:`answer_from_reply` reads omnigent's reply (``action`` + ``content``) through the one answer
parser, :func:`agy_harness.core.answers.parse_answer`; anything it cannot read unambiguously raises
:class:`~agy_harness.core.answers.AnswerError` and nothing is sent to agy (the caller asks again).

* permission: ``accept`` allows; ``decline`` denies; ``cancel`` (dismissed, or omnigent's timeout)
  denies. A form that carries ``content["answer"]`` is read as the answer's text ("allow", "deny").
* question: ``content`` keyed by the question's id (its index, ``"0"``) or by its text; a value is
  the chosen label, a list of labels (multi-select), or free text (the write-in).
  ``decline`` / ``cancel`` refuse the question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from agy_harness.core.answers import parse_answer
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

HARNESS_LABEL = "Antigravity"


def elicitation_id(gate: GateOpened) -> str:
    """A deterministic id without ``/`` (omnigent's resolve route puts it in a URL path)."""
    digest = hashlib.sha256(gate.gate_id.encode()).hexdigest()[:24]
    return f"agy_{digest}"


def elicitation_params(gate: GateOpened, note: str = "") -> dict[str, Any]:
    """omnigent's ``ElicitationRequestParams`` fields for ``gate`` (``note`` prefixes the message)."""
    prefix = f"{note}\n\n" if note else ""
    extras: dict[str, Any] = {
        "trajectory_id": gate.trajectory_id,
        "step_index": gate.step_index,
        "agy_gate_id": gate.gate_id,
    }
    if gate.kind == "permission":
        p = gate.permission
        command = (p.command_line or p.target) if p else ""
        message = (
            f"{HARNESS_LABEL} wants to run: {command}" if command else f"{HARNESS_LABEL} asks permission"
        )
        if p is not None:
            if command:
                extras["command"] = command
            if p.cwd:
                extras["cwd"] = p.cwd
            if p.description:
                extras["action_description"] = p.description
        preview = command or (p.description if p else "")
        return {
            "mode": "form",
            "message": prefix + message,
            "requestedSchema": None,
            "phase": "agy_permission",
            "policy_name": "agy_harness_permission",
            "content_preview": preview[:1024],
            **extras,
        }
    questions = [
        {
            "id": str(i),
            "question": q.question,
            "options": [{"label": o.text} for o in q.options],
            "multiSelect": q.multi_select,
        }
        for i, q in enumerate(gate.questions)
    ]
    first = gate.questions[0].question if gate.questions else ""
    return {
        "mode": "form",
        "message": prefix
        + (f"{HARNESS_LABEL} asks: {first}" if first else f"{HARNESS_LABEL} needs your input"),
        "requestedSchema": None,
        "phase": "agy_ask_question",
        "policy_name": "agy_harness_ask_question",
        "content_preview": first[:1024],
        "ask_user_question": {"questions": questions},
        **extras,
    }


def _labels(value: object) -> list[str] | object:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return value
    return value  # not text: the parser refuses it with a clear message


def answer_from_reply(gate: GateOpened, action: str, content: Mapping[str, object] | None) -> GateAnswer:
    """omnigent's elicitation reply as a checked :class:`GateAnswer`; raises ``AnswerError``."""
    if action in ("decline", "cancel"):
        return parse_answer(gate, action)
    if action != "accept":
        return parse_answer(gate, "cancel")
    content = content or {}
    if gate.kind == "permission":
        if "answer" in content:
            return parse_answer(gate, content["answer"])
        return parse_answer(gate, True)
    per_question: list[object] = []
    for i, question in enumerate(gate.questions):
        value = content.get(str(i))
        if value is None:
            value = content.get(question.question)
        per_question.append([] if value is None else _labels(value))
    return parse_answer(gate, per_question)
