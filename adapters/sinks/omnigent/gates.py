"""Gates on omnigent's web UI: the elicitation id, the params its cards render, and reading its answers.

* :func:`elicitation_id`: ``elicit_agy_<32 hex>``, a digest of the gate id. Deterministic (a re-POST
  after a lost connection re-parks the SAME elicitation, and a verdict given in between is handed to
  it) and free of ``/`` (the web UI resolves ``/elicitations/{encodeURIComponent(id)}/resolve``, and
  a ``%2F`` never matches the route).
* :func:`gate_params`: what omnigent's web UI renders (``omnigent/server/routes/_antigravity_elicitation.py``
  builds the same for its own agy harness): a question gate as the interactive AskUserQuestion form
  (``ask_user_question.questions[i] = {id: "<i>", question, options: [{label}], multiSelect}``, every
  question also takes free text); a permission gate as the agy card of :mod:`.cards` (``phase``
  ``agy_permission``, each field in the medium that shows it, one button per labelled choice). agy's
  text is shown by the core's one rendering rule (:mod:`agy_harness.core.display`). Each request goes out under its own
  ``policy_name`` (:func:`policy_name`): omnigent's chat remembers "approve always" per policy name.
* :func:`answer_from_result`: omnigent's ``ElicitationResult`` ``{action, content}`` -> the core's
  fail-closed :func:`~agy_harness.core.answers.parse_answer`. The shapes read:

  - ``decline`` / ``cancel``: refuse (a permission is denied, a question skipped);
  - permission, ``accept``: no content allows once; ``{"answer": "<a choice's label>"}`` (the card's
    buttons) is that choice; other ``content`` of one ``allow``/``approve``/``answer``/``"0"`` key is
    read by ``parse_answer`` (``{"allow": false}`` denies, ``{"answer": "no: <reason>"}`` denies and
    tells agy why); ``_meta.persist`` (omnigent's own agy buttons, never offered here) is refused;
  - question, ``accept``: the web form's ``content = {"0": "<label>", "1": ["<label>", "<free text>"]}``
    (keyed by question index, also accepted: the question's text); values are option labels, option ids
    or free text (the write-in), a list for a multi-select. A web-form value is the label the human
    clicked: an exact label is read before an id (option 1 labelled ``2`` is option 1); where the
    terminal chat keys a field alike (it types numbers), a label that is another option's number is refused.

  Anything else raises :class:`~agy_harness.core.answers.AnswerError`: nothing reaches agy, the sink
  tells the human and asks again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from rich.markup import escape as escape_markup

from agy_harness.core import code_review
from agy_harness.core.answers import (
    Allow,
    AnswerError,
    CheckedAnswer,
    fold,
    match_option,
    parse_answer,
    texts,
)
from agy_harness.core.display import command_view, flagged, one_line, visible
from agy_harness.core.kinds import describe
from agy_harness.core.terminal_pointer import POINTER, without_pointer
from agy_harness.ports.errors import AgyHarnessError
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .cards import COMMAND_LINES, NO_ACCEPT, choice_for, markup_neutral, permission_fields

ELICITATION_PREFIX = "elicit_agy_"
PERMISSION_KEYS = ("allow", "approve", "answer", "0")


class OmnigentProtocolError(AgyHarnessError):
    """omnigent answered the hook with something that is not an ``{action, content}`` verdict."""


def elicitation_id(gate_id: str) -> str:
    return ELICITATION_PREFIX + hashlib.sha256(gate_id.encode("utf-8")).hexdigest()[:32]


def _command(gate: GateOpened) -> str:
    p = gate.permission
    if p is None:
        return ""
    return p.command_line or p.target or ""


def policy_name(gate: GateOpened) -> str:
    """The policy name an elicitation goes out under: one per request (its digest). omnigent's chat
    remembers "a = approve always (this session)" per ``(policy_name, phase)``, so "always" there covers
    exactly this request (and agy's re-ask of it after a timeout), never another command."""
    request = gate.digest or hashlib.sha256(gate.gate_id.encode("utf-8")).hexdigest()
    if gate.kind == "other" or not gate.answerable:
        return f"agy_native_terminal_only.{request[:16]}"
    base = "agy_native_permission" if gate.kind == "permission" else "agy_native_ask_question"
    return f"{base}.{request[:16]}"


def gate_params(gate: GateOpened) -> dict[str, Any]:
    """The hook's ``params`` for ``gate`` (deterministic: omnigent fingerprints them to match re-POSTs)."""
    common: dict[str, Any] = {
        "mode": "form",
        "requestedSchema": None,
        "trajectory_id": gate.trajectory_id,
        "step_index": gate.step_index,
        "agy_gate_id": gate.gate_id,
        "agy_cascade_id": gate.cascade_id,
    }
    if gate.kind == "permission" and gate.answerable:
        p = gate.permission
        params = {
            **common,
            "phase": "agy_permission",
            "policy_name": policy_name(gate),
            "permission_spec": {
                "resource": {"action": p.action if p else "", "target": p.target if p else ""},
                "actionDescription": p.description if p else "",
            },
            **permission_fields(gate),  # message, action_description, content_preview, the choices
        }
        command = _command(gate)
        if command:  # the whole command, every line, by the rendering rule (for API readers)
            view = command_view(command, COMMAND_LINES)
            params["command"] = "\n".join(view.body)  # the command alone; its hash and flags beside it
            params["request_hash"] = view.hash
        if p and p.cwd:
            params["cwd"] = visible(p.cwd)
        return params
    if gate.kind == "other" or not gate.answerable:
        return {**common, **terminal_only_fields(gate)}
    questions = [
        {
            "id": str(i),
            # by the rendering rule, look-alikes flagged: the web form shows these and answers with a label
            "question": flagged(q.question),
            "options": [{"label": flagged(o.text)} for o in q.options],
            "multiSelect": q.multi_select,
        }
        for i, q in enumerate(gate.questions)
    ]
    return {
        **common,
        "message": "\n".join(escape_markup(flagged(q.question)) for q in gate.questions)
        or "Antigravity needs your input",
        "phase": "agy_ask_question",
        "policy_name": policy_name(gate),
        "ask_user_question": {"questions": questions},
        "requestedSchema": question_schema(gate),
        "content_preview": options_preview(gate),
        "ask_question": {
            "questions": [
                {
                    "question": q.question,
                    "options": [{"id": o.id, "text": o.text} for o in q.options],
                    "is_multi_select": q.multi_select,
                }
                for q in gate.questions
            ]
        },
    }


#: after an answer omnigent gave it (any button, the chat's y / n): nothing reached agy
REFUSED_NOTE = "Nothing was sent to agy: it waits for this in agy's terminal; answer it there."


def terminal_head(gate: GateOpened) -> str:
    """What agy asks, on one line (the core's card text), without a pointer to agy's terminal."""
    return without_pointer(describe(gate))


def terminal_only_fields(gate: GateOpened, note: str = "") -> dict[str, Any]:
    """The card of a gate nothing here can answer. It says "answer in agy's terminal" once, on every
    render: ``note`` (why it is shown again, which names agy's terminal itself) replaces the pointer.
    The chat prints ``message`` and ``content_preview`` both: the preview says what ``y`` / ``n`` do
    (nothing reaches agy), not the pointer again."""
    head = terminal_head(gate)
    if note:
        text = f"{note}\n\n{head} (omnigent cannot answer it). This card goes away when agy moves on."
    else:
        text = f"{head} — {POINTER} (omnigent cannot answer it). This card goes away when agy moves on."
    return {
        # one field for both media: exact where markup escaping leaves it unchanged (cards.py)
        "message": text if markup_neutral(text) else escape_markup(text),
        "phase": "agy_terminal_only",
        "policy_name": policy_name(gate),
        "content_preview": "omnigent cannot answer this request: y and n send nothing to agy",
    }


def question_keys(gate: GateOpened) -> list[str]:
    """The form's field per question: its text by the rendering rule (what a terminal shows as the
    field's name), or its index when two questions read the same. :func:`answer_from_result` reads
    both."""
    shown = [one_line(q.question.strip()) for q in gate.questions]
    folded = [fold(text) for text in shown]
    return [
        text if text and folded.count(folded[i]) == 1 and not text.isdigit() else str(i)
        for i, text in enumerate(shown)
    ]


def _choices(gate: GateOpened, i: int) -> str:
    """A question's options by number, by the rendering rule (plain text: no markup)."""
    return "; ".join(f"{one_line(o.id)} = {flagged(o.text.strip())}" for o in gate.questions[i].options)


def question_schema(gate: GateOpened) -> dict[str, Any]:
    """A form omnigent's terminal chat asks field by field (``repl/_repl.py _prompt_schema_fields``):
    one free-text field per question whose description lists the options by number. Free text (no
    ``enum``) so the chat never fills it in by itself; the typed option number, label, several of
    them comma-separated for a multi-select, or a write-in is read by :func:`answer_from_result`."""
    properties: dict[str, Any] = {}
    for i, (key, q) in enumerate(zip(question_keys(gate), gate.questions, strict=True)):
        how = "one or more option numbers, comma-separated" if q.multi_select else "an option's number"
        options = f"Options: {_choices(gate, i)} -- type {how}, or your own answer" if q.options else ""
        properties[key] = {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
            "title": flagged(q.question),
            "description": options or "Type your answer.",
        }
    return {"type": "object", "properties": properties, "required": list(properties)}


def options_preview(gate: GateOpened) -> str:
    """The options as a terminal shows them before its approve/refuse line (``y``, then the number).
    omnigent's chat prints the preview as rich markup: agy's text in it is escaped."""
    lines = [
        escape_markup(f"{one_line(q.question)} [{_choices(gate, i)}]")
        for i, q in enumerate(gate.questions)
        if q.options
    ]
    return " · ".join(lines) + " (y, then type your choice; n refuses and stops agy's turn)"


def _split_choices(gate: GateOpened, index: int, value: tuple[str, ...]) -> tuple[str, ...]:
    """A terminal's one line for a multi-select question: ``"1, 3"`` is options 1 and 3 when every
    part names an option; otherwise the text stays whole (a write-in, or refused)."""
    q = gate.questions[index]
    if not q.multi_select or len(value) != 1 or "," not in value[0]:
        return value
    parts = [p.strip() for p in value[0].split(",") if p.strip()]
    if parts and all(match_option(q, p) is not None for p in parts):
        return tuple(parts)
    return value


def _web_labels(gate: GateOpened, index: int, value: tuple[str, ...], *, typed_too: bool) -> tuple[str, ...]:
    """The web form's values for question ``index``: each the LABEL the human clicked (or free
    text), so an exact label is read as its option's id before an id could be (a hostile model
    labels option 1 ``2``: a click on it is option 1, never option 2). ``typed_too``: the terminal
    chat keys this field alike (it types option numbers): a value that is one option's label and
    another option's number could be either, and is refused."""
    q = gate.questions[index]
    out = []
    for text in value:
        by_label = {
            o.id for o in q.options if flagged(o.text).strip() == text.strip()
        }  # as the form shows it
        by_id = {o.id for o in q.options if o.id == text.strip()}
        if len(by_label) != 1:
            out.append(text)  # no label (free text, a number), or several: the core reads or refuses it
            continue
        if typed_too and by_id and by_id != by_label:
            raise AnswerError(
                f"{text!r} is the label of one option of {q.question!r} and the number of another: "
                "it could name either; answer on the web form, or decline"
            )
        out.append(next(iter(by_label)))
    return tuple(out)


def _question_content(gate: GateOpened, content: Mapping[str, Any]) -> GateAnswer:
    named: dict[str, set[int]] = {}  # a question's text (as agy sent it, as the terminal form shows it)
    keys = question_keys(gate)
    for i, (key, q) in enumerate(zip(keys, gate.questions, strict=True)):
        named.setdefault(fold(key), set()).add(i)
        named.setdefault(fold(q.question), set()).add(i)
    indices = {str(i): i for i in range(len(gate.questions))}  # the web form's keys
    picked: dict[int, tuple[str, ...]] = {}
    for key, value in content.items():
        web = key in indices
        if web:
            index = indices[key]
        else:
            matches = named.get(fold(key), set())
            if len(matches) != 1:
                what = "names no question" if not matches else "could name several questions"
                raise AnswerError(f"the answer {what} of this gate: {key!r}")
            (index,) = matches
        if index in picked:
            raise AnswerError(f"question {index + 1} is answered twice")
        typed = not web or keys[index] == key  # the terminal chat's field (it types numbers)
        values = texts(value, f"question {index + 1}")
        values = _split_choices(gate, index, values) if typed else values
        picked[index] = _web_labels(gate, index, values, typed_too=typed) if web else values
    selections = tuple(picked.get(i, ()) for i in range(len(gate.questions)))
    return parse_answer(gate, GateAnswer(selections=selections))


def _permission_content(gate: GateOpened, content: Mapping[str, Any]) -> GateAnswer:
    answer = _permission_answer(gate, content)
    if code_review.is_review(gate) and isinstance(answer.verdict, Allow):  # (cards.NO_ACCEPT)
        raise AnswerError(NO_ACCEPT)
    return answer


def _permission_answer(gate: GateOpened, content: Mapping[str, Any]) -> CheckedAnswer:
    if not content:
        return parse_answer(gate, True)  # an explicit accept without a form: allow once
    if len(content) != 1:
        raise AnswerError(f"a permission answer has one allow/deny value, got {sorted(content)}")
    ((key, value),) = content.items()
    if fold(key) not in PERMISSION_KEYS:
        raise AnswerError(f"a permission answer is keyed {PERMISSION_KEYS}, got {key!r}")
    picked = choice_for(gate, value) if isinstance(value, str) else None
    if picked is not None:  # one of the card's labelled choices, exactly as the card offered it
        return parse_answer(gate, picked.answer)
    return parse_answer(gate, value)


def _persist(result: Mapping[str, Any]) -> object:
    """omnigent's own agy buttons' ``_meta.persist`` (``session`` / ``always``): never offered on this
    harness's cards (their labels promise what agy's pane, not the harness, would keep)."""
    meta = result.get("_meta", result.get("meta"))
    return meta.get("persist") if isinstance(meta, Mapping) else None


def answer_from_result(gate: GateOpened, result: Any) -> GateAnswer:
    """omnigent's ``{action, content}`` verdict -> a checked GateAnswer (see the module doc).

    Raises :class:`OmnigentProtocolError` for a body that is not a verdict and
    :class:`~agy_harness.core.answers.AnswerError` for a verdict that does not answer this gate.
    """
    if not isinstance(result, Mapping):
        raise OmnigentProtocolError(f"the hook's verdict must be an object, got {type(result).__name__}")
    action = result.get("action")
    if action not in ("accept", "decline", "cancel"):
        raise OmnigentProtocolError(f"the hook's verdict has no valid action: {action!r}")
    if action != "accept":
        return parse_answer(gate, action)
    content = result.get("content")
    if content is None:
        content = {}
    if not isinstance(content, Mapping):
        raise AnswerError(f"the answer's content must be an object, got {type(content).__name__}")
    if gate.kind == "permission":
        persist = _persist(result)
        if persist is not None:  # refused whatever it says: nothing this card offers sends it
            raise AnswerError(
                f"this card does not offer omnigent's {persist!r} allow (_meta.persist); "
                "pick one of the card's choices"
            )
        return _permission_content(gate, content)
    if not content:
        raise AnswerError("the question was accepted without an answer")
    return _question_content(gate, content)
