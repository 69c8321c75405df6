"""Reading a human's answer to a question gate (agy's ask_question): option ids, labels, write-ins;
the rules are :mod:`.answers`' module doc. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from agy_harness.ports.events import GateOpened, Question
from agy_harness.ports.protocols import GateAnswer

from .verdicts import REFUSE_WORDS, AnswerError, Choose, Refuse, Response, _show, fold

QUESTION_FORMS = (
    "an option id ('1'), an option's label, or write-in text; a list of them for a multi-select "
    "(or one per question); a list of lists for several questions; False / 'decline' / 'cancel' to refuse"
)


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
        return value
    if isinstance(value, bool):
        if value:
            raise AnswerError(f"True does not say which option; accepted: {QUESTION_FORMS}")
        return GateAnswer(action="decline")
    if isinstance(value, str):
        word = fold(value)
        if word in REFUSE_WORDS:
            return GateAnswer(action="decline" if word == "decline" else "cancel")
        return GateAnswer(selections=((value,),))
    if isinstance(value, list | tuple):
        items: Sequence[object] = value
        per_question = bool(items) and all(isinstance(i, list | tuple) for i in items)
        if per_question or len(gate.questions) > 1:
            return GateAnswer(selections=tuple(texts(i, f"answer {n + 1}") for n, i in enumerate(items)))
        return GateAnswer(selections=(texts(items, "answer"),))
    raise AnswerError(f"cannot read {_show(value)} as an answer; accepted: {QUESTION_FORMS}")


def _question_verdict(gate: GateOpened, answer: GateAnswer) -> Choose | Refuse:
    if answer.persist is not None or answer.scope is not None:
        raise AnswerError("allow always applies only to allowing a permission")
    if answer.edited_command:
        raise AnswerError("an edited command applies only to allowing a command")
    if answer.action != "accept":
        return Refuse(answer.action)
    if len(answer.selections) > len(gate.questions) or len(answer.write_ins) > len(gate.questions):
        raise AnswerError(f"{len(answer.selections)} answers for {len(gate.questions)} question(s)")
    responses = []
    for i, question in enumerate(gate.questions):
        choices = answer.selections[i] if i < len(answer.selections) else ()
        write_in = answer.write_ins[i] if i < len(answer.write_ins) else ""
        ids, text = resolve_question(question, choices, write_in)
        responses.append(Response(question.question, tuple(ids), text))
    return Choose(tuple(responses))


def match_option(question: Question, choice: str) -> str | None:
    """The option id for ``choice``: an id ("2"), else an option's exact label, else its label with
    case and spaces ignored; None when it names no option. A choice that could name several options
    (two labels that fold alike, the exact label of several) or names an option whose id another
    option shares (agy's answer carries only the id) is refused: an ambiguous answer is never guessed."""
    choice = choice.strip()
    options = question.options
    found = [o for o in options if choice == o.id]
    if not found:
        found = [o for o in options if choice == o.text.strip()]
    if not found:
        folded = fold(choice)
        found = [o for o in options if folded and fold(o.text) == folded]
    if not found:
        return None
    if len(found) > 1 and len({o.id for o in found}) > 1:
        raise AnswerError(
            f"{choice!r} could name several options of {question.question!r}: "
            f"{', '.join(repr(o.text) for o in found)}; answer by the option's number"
        )
    option_id = found[0].id
    sharing = [o for o in options if o.id == option_id]
    if len(sharing) > 1:
        raise AnswerError(
            f"options {', '.join(repr(o.text) for o in sharing)} of {question.question!r} share the id "
            f"{option_id!r}: agy could not tell which one was chosen; decline, or write your own answer"
        )
    return option_id


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
