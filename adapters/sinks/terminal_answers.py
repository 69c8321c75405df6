"""Reading a human's typed answer to a gate (the terminal sink's prompts): numbers, labels, y/n.

The words that allow or deny come from the core's one fail-closed parser
(:mod:`agy_harness.core.answers`); anything else is asked again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agy_harness.adapters.sinks.escape import visible
from agy_harness.adapters.sinks.terminal_cards import MAX_COMMAND_LINES, prompt_label
from agy_harness.core.answers import (
    ALLOW_WORDS,
    DENY_WORDS,
    AnswerError,
    carries_reason,
    parse_answer,
    resolve_question,
)
from agy_harness.core.display import command_view
from agy_harness.core.scopes import allow_choices, deny_label, scope_label
from agy_harness.ports.events import GateOpened, Question
from agy_harness.ports.protocols import GateAnswer

#: What refuses a gate at a prompt (end of input, Ctrl-D, cancels it too).
REFUSE = {"/cancel": "cancel", "/decline": "decline"}


def parse_choice(question: Question, line: str) -> tuple[str, ...] | None:
    """A typed answer to one question -> selections (option ids, or the text itself); None = invalid.

    Only numbers ("2", "1,3"): the options at those positions (several only for a multi-select).
    Anything else is one answer: an option's label or a write-in (the core tells them apart).
    """
    text = line.strip()
    if not text:
        return None
    tokens = [t.strip() for t in text.split(",")]
    if question.options and all(t.isdigit() for t in tokens):
        positions = [int(t) for t in tokens]
        if any(not 1 <= p <= len(question.options) for p in positions):
            return None
        ids: list[str] = []
        for p in positions:
            option_id = question.options[p - 1].id
            if option_id not in ids:
                ids.append(option_id)
        if len(ids) > 1 and not question.multi_select:
            return None
        return tuple(ids)
    return (text,)


def parse_permission(line: str) -> bool | None:
    """A typed permission answer, read by the core's one fail-closed parser: True only for an explicit
    allow word, False for a deny word, None (ask again) for anything else."""
    word = " ".join(line.split()).casefold()
    if word in ALLOW_WORDS:
        return True
    if word in DENY_WORDS:
        return False
    return None


def scope_choice(gate: GateOpened, line: str) -> GateAnswer | None:
    """A number typed at a permission prompt: the allow with the gate's scope at that position."""
    text = line.strip()
    choices = allow_choices(gate)
    if not text.isdigit() or not 1 <= int(text) <= len(choices):
        return None
    scope = choices[int(text) - 1]
    return GateAnswer(allow=True, scope=None if scope == "once" else scope)


async def _confirm_edit(
    gate: GateOpened,
    answer: GateAnswer,
    read: Callable[[str], Awaitable[str | None]],
    say: Callable[[str], None],
) -> GateAnswer | None:
    """Edit, then run: the edited command is shown whole (the one display rule) and allowed only on an
    explicit y; None: not confirmed, the gate is asked again."""
    view = command_view(answer.edited_command, MAX_COMMAND_LINES)
    say("your edit, which runs instead of agy's command:")
    for row in view.lines:
        say(f"  $ {row}")
    line = await read(f"$ {view.prompt_label} · run the edited command? [y/n] ")
    if line is not None and parse_permission(line) is True:
        return answer
    say("not confirmed; the request is asked again")
    return None


def describe_answer(gate: GateOpened, answer: GateAnswer) -> str:
    """A one-line human reading of ``answer`` (option ids shown as their texts)."""
    if answer.action != "accept":
        return "declined" if answer.action == "decline" else "cancelled"
    if gate.kind == "permission":
        if answer.allow is None:
            return "no answer (refused: not an explicit allow or deny)"
        if answer.allow and answer.edited_command:
            return f"allow the edited command: {command_view(answer.edited_command).title()}"
        if answer.allow and answer.scope not in (None, "once"):
            return (
                scope_label(gate, answer.scope or "")
                .replace("Allow", "allow", 1)
                .replace("Always", "always", 1)
            )
        said = "allow" if answer.allow else (visible(deny_label(gate).lower()) if gate.deny_label else "deny")
        return f"{said}: {answer.deny_reason}" if answer.deny_reason and answer.allow is False else said
    parts: list[str] = []
    for i, question in enumerate(gate.questions):
        choices = answer.selections[i] if i < len(answer.selections) else ()
        texts = [next((o.text for o in question.options if o.id == c), c) for c in choices]
        if i < len(answer.write_ins) and answer.write_ins[i]:
            texts.append(answer.write_ins[i])
        parts.append(", ".join(texts) if texts else "(no answer)")
    return "; ".join(parts)


def retry_line(gate: GateOpened, line: str) -> str:
    """One line after a permission answer that is none: the answers this gate takes (its card lists
    them whole) and what was typed, cut; never the parser's list of accepted Python values."""
    choices = allow_choices(gate)
    words = ["y (allow)", "n (deny)"] if choices else ["n (deny)"]
    if len(choices) > 1:
        words.append(f"1-{len(choices)}")
    if carries_reason(gate):
        words.append("n: <reason>")
    if gate.editable and choices:
        words.append("edit: <command>")
    typed = visible(" ".join(line.split()))
    typed = typed if len(typed) <= 12 else typed[:11] + "…"  # (echoed whole above: the line fits 80)
    return f"please answer {', '.join(words)}; not read: {typed!r}"


async def ask_at_keyboard(
    gate: GateOpened, read: Callable[[str], Awaitable[str | None]], say: Callable[[str], None]
) -> GateAnswer:
    """Put ``gate`` to the human: ``read(prompt)`` a line (None: end of input), ``say`` a hint."""
    if gate.kind == "permission":
        label = prompt_label(gate)
        ask = "allow? [y/n] " if allow_choices(gate) else "cannot be allowed here: deny? [n] "  # (cut)
        while True:
            line = await read(f"$ {label} · {ask}" if label else ask)
            if line is None:
                return GateAnswer(action="cancel", allow=False)
            if line.strip() in REFUSE:
                return GateAnswer(action="decline", allow=False)
            try:
                answer = parse_answer(gate, scope_choice(gate, line) or line)
            except AnswerError:
                say(retry_line(gate, line))
                continue
            if answer.edited_command:
                confirmed = await _confirm_edit(gate, answer, read, say)
                if confirmed is None:
                    continue
                return confirmed
            return answer
    selections: list[tuple[str, ...]] = []
    for i, question in enumerate(gate.questions):
        if not question.options:
            hint = "your answer"
        elif question.multi_select:
            hint = f"1-{len(question.options)}, comma-separated for several, or type an answer"
        else:
            hint = f"1-{len(question.options)}, or type an answer"
        label = f"{i + 1}" if len(gate.questions) > 1 else ""
        while True:
            line = await read(f"answer{' ' + label if label else ''} ({hint}): ")
            if line is None:
                return GateAnswer(action="cancel")
            if line.strip() in REFUSE:
                return GateAnswer(action=REFUSE[line.strip()])
            choice = parse_choice(question, line)
            try:
                if choice is not None:
                    resolve_question(question, choice)
                    selections.append(choice)
                    break
                say("not a valid choice; try again")
            except AnswerError as exc:
                say(f"{visible(str(exc))}; try again")
    return parse_answer(gate, GateAnswer(selections=tuple(selections)))
