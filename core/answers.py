"""Reading a human's answer to a gate, failing closed: the ONE parser every answer path uses.

``Session.answer``, the terminal sink's prompt, the omnigent sink and any other front end turn what the
human gave into a :class:`GateAnswer` with :func:`parse_answer`, and the harness checks every answer
with :func:`check_answer` before it builds agy's payload. The rules:

Permission gates (a command, a file write...):

* allow only on an explicit allow: ``True``, ``GateAnswer(allow=True)``, or one of :data:`ALLOW_WORDS`
  (``"allow"``, ``"yes"``, ``"y"``, ``"approve"``, ``"ok"``, ``"true"``; case and spaces ignored);
* deny on ``False``, ``GateAnswer(allow=False)`` or one of :data:`DENY_WORDS` (``"deny"``, ``"no"``,
  ``"n"``, ``"reject"``, ``"false"``); ``"decline"`` / ``"cancel"`` refuse (a permission is denied);
* deny and tell agy why: a deny word, a colon and the reason (``"no: use make clean instead"``), or
  ``GateAnswer(allow=False, deny_reason=...)`` (agy's ``userDenyInstruction``); a reason with an allow
  is refused;
* anything else (``None``, ``""``, ``[]``, ``1``, ``"maybe"``, ``GateAnswer()`` without ``allow``)
  raises :class:`AnswerError` -- never an approval.

Question gates (ask_question):

* ``"2"`` (an option id) or an option's label picks that option; ``["1", "3"]`` several (a
  multi-select), or one per question when the gate has several questions; ``[["1"], ["2", "3"]]``
  one list per question; ``GateAnswer(selections=..., write_ins=...)`` as is;
* the write-in rule: non-empty text that is not a number and matches no option's id or label is
  sent as the question's write-in (``writeInResponse``);
* ``False``, ``"decline"``, ``"cancel"`` refuse;
* refused with :class:`AnswerError`: ``True`` (which option?), an empty answer, a question left
  without any choice or write-in, a number that is no option's id, several choices for a
  single-select question, more answers than questions, values that are not text.

Pure: imports only ports and stdlib.
"""

from __future__ import annotations

from collections.abc import Sequence

from agy_harness.ports.errors import AgyHarnessError
from agy_harness.ports.events import GateOpened, Question
from agy_harness.ports.protocols import GateAnswer

ALLOW_WORDS = frozenset({"allow", "allowed", "approve", "approved", "yes", "y", "ok", "true"})
DENY_WORDS = frozenset({"deny", "denied", "reject", "rejected", "no", "n", "false"})
REFUSE_WORDS = frozenset({"decline", "cancel"})

PERMISSION_FORMS = (
    "True / 'allow' / 'yes' / 'y' / 'approve' / 'ok' to allow; False / 'deny' / 'no' / 'n' / 'reject' to deny; "
    "'deny: <reason>' to deny and tell agy why; 'decline' / 'cancel' to refuse"
)
QUESTION_FORMS = (
    "an option id ('1'), an option's label, or write-in text; a list of them for a multi-select "
    "(or one per question); a list of lists for several questions; False / 'decline' / 'cancel' to refuse"
)


class AnswerError(AgyHarnessError, ValueError):
    """The answer cannot be read unambiguously for this gate; nothing was sent to agy."""


def fold(text: str) -> str:
    """``text`` compared loosely: whitespace runs as one space, case folded."""
    return " ".join(text.split()).casefold()


def _permission(value: object) -> GateAnswer:
    if isinstance(value, GateAnswer):
        if value.action != "accept":
            return value.model_copy(update={"allow": False})
        if value.allow is None:
            raise AnswerError(
                f"a permission answer needs an explicit allow or deny; accepted: {PERMISSION_FORMS}"
            )
        return value
    if isinstance(value, bool):
        return GateAnswer(allow=True) if value else GateAnswer(action="decline", allow=False)
    if isinstance(value, str):
        word = fold(value)
        head, colon, reason = value.partition(":")
        if colon and fold(head) in DENY_WORDS and reason.strip():
            return GateAnswer(allow=False, deny_reason=reason.strip())  # deny, and tell agy why
        if word in ALLOW_WORDS:
            return GateAnswer(allow=True)
        if word in DENY_WORDS:
            return GateAnswer(allow=False)
        if word in REFUSE_WORDS:
            return GateAnswer(action="decline" if word == "decline" else "cancel", allow=False)
        raise AnswerError(f"cannot read {value!r} as allow or deny; accepted: {PERMISSION_FORMS}")
    if isinstance(value, list | tuple) and len(value) == 1:
        return _permission(value[0])  # a form's one answer: ["deny"], [["allow"]]
    raise AnswerError(f"cannot read {_show(value)} as allow or deny; accepted: {PERMISSION_FORMS}")


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def texts(value: object, where: str) -> tuple[str, ...]:
    """One text or a list of texts, as a tuple; AnswerError (naming ``where``) for anything else."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise AnswerError(
        f"{where}: expected text or a list of texts, got {_show(value)}; accepted: {QUESTION_FORMS}"
    )


def _question(gate: GateOpened, value: object) -> GateAnswer:
    if isinstance(value, GateAnswer):
        answer = value
    elif isinstance(value, bool):
        if value:
            raise AnswerError(f"True does not say which option; accepted: {QUESTION_FORMS}")
        answer = GateAnswer(action="decline")
    elif isinstance(value, str):
        word = fold(value)
        answer = (
            GateAnswer(action="decline" if word == "decline" else "cancel")
            if word in REFUSE_WORDS
            else (GateAnswer(selections=((value,),)))
        )
    elif isinstance(value, list | tuple):
        items: Sequence[object] = value
        per_question = bool(items) and all(isinstance(i, list | tuple) for i in items)
        if per_question or len(gate.questions) > 1:
            answer = GateAnswer(selections=tuple(texts(i, f"answer {n + 1}") for n, i in enumerate(items)))
        else:
            answer = GateAnswer(selections=(texts(items, "answer"),))
    else:
        raise AnswerError(f"cannot read {_show(value)} as an answer; accepted: {QUESTION_FORMS}")
    check_answer(gate, answer)
    return answer


def parse_answer(gate: GateOpened, value: object) -> GateAnswer:
    """``value`` as a checked :class:`GateAnswer` for ``gate``; raises :class:`AnswerError` (a
    ValueError naming the accepted forms) for anything that is not unambiguous. See the module doc."""
    if gate.kind == "permission":
        return _permission(value)
    return _question(gate, value)


def match_option(question: Question, choice: str) -> str | None:
    """The option id for ``choice``: an id ("2") or an option's label (case and spaces ignored)."""
    choice = choice.strip()
    for option in question.options:
        if choice == option.id:
            return option.id
    folded = fold(choice)
    for option in question.options:
        if folded and fold(option.text) == folded:
            return option.id
    return None


def resolve_question(question: Question, choices: Sequence[str], write_in: str = "") -> tuple[list[str], str]:
    """(option ids, write-in text) for one question; raises :class:`AnswerError` when the choices
    leave it unanswered or ambiguous (see the module doc)."""
    ids: list[str] = []
    texts = [write_in.strip()] if write_in.strip() else []
    for choice in choices:
        option_id = match_option(question, choice)
        if option_id is not None:
            if option_id not in ids:
                ids.append(option_id)
            continue
        text = choice.strip()
        if not text:
            continue
        if question.options and text.isdigit():
            known = ", ".join(o.id for o in question.options)
            raise AnswerError(f"{text!r} is no option of {question.question!r} (options: {known})")
        texts.append(text)
    if not question.multi_select and len(ids) + len(texts) > 1:
        raise AnswerError(f"{question.question!r} takes one answer, got {len(ids) + len(texts)}")
    if not ids and not texts:
        raise AnswerError(f"no answer for {question.question!r}; accepted: {QUESTION_FORMS}")
    return ids, "\n".join(texts)


def check_answer(gate: GateOpened, answer: GateAnswer) -> None:
    """Raise :class:`AnswerError` unless ``answer`` is an unambiguous answer to ``gate``. A gate no
    known payload answers (kind ``other``, or not ``answerable``) takes no answer at all, not even a
    decline: only agy's own terminal can answer it."""
    if not gate.answerable or gate.kind == "other":
        raise AnswerError(
            f"agy waits for this {gate.interaction or gate.kind} in its own terminal; "
            "it cannot be answered from here"
        )
    if answer.action != "accept":
        return
    if gate.kind == "permission":
        if answer.allow is None:
            raise AnswerError(
                f"a permission answer needs an explicit allow or deny; accepted: {PERMISSION_FORMS}"
            )
        if answer.allow and answer.deny_reason.strip():
            raise AnswerError("a reason goes with a denial, not with an allow")
        return
    if len(answer.selections) > len(gate.questions) or len(answer.write_ins) > len(gate.questions):
        raise AnswerError(f"{len(answer.selections)} answers for {len(gate.questions)} question(s)")
    for i, question in enumerate(gate.questions):
        choices = answer.selections[i] if i < len(answer.selections) else ()
        write_in = answer.write_ins[i] if i < len(answer.write_ins) else ""
        resolve_question(question, choices, write_in)
