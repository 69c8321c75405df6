"""Reading a human's answer to a gate, failing closed: the ONE parser every answer path uses.

``Session.answer``, the terminal sink's prompt, the omnigent sink and any other front end turn what the
human gave into a :class:`CheckedAnswer` with :func:`parse_answer`: parse, don't validate. A checked
answer is bound to the gate it was read for (its ``gate_id`` and ``digest``) and carries its verdict
(:class:`Allow` / :class:`Deny` for a permission, :class:`Choose` -- the option ids and write-in of
each question, resolved -- or :class:`Refuse` for a question). The gate bridge, the payload builder
(:mod:`.elicitation`) and key typing (:mod:`.tui_keys`) take it as it is: an answer is read once on
its way to agy, and what reaches agy is decided by the verdict alone. A checked answer is still a
:class:`GateAnswer` (the loose form it was read from), so a sink returns it from ``ask`` unchanged;
an edited copy (``model_copy``) is a plain GateAnswer again, read anew by the bridge. The rules:

Permission gates (a command, a file write...):

* allow only on an explicit allow: ``True``, ``GateAnswer(allow=True)``, or one of :data:`ALLOW_WORDS`
  (``"allow"``, ``"yes"``, ``"y"``, ``"approve"``, ``"ok"``, ``"true"``; case and spaces ignored);
* deny on ``False``, ``GateAnswer(allow=False)`` or one of :data:`DENY_WORDS` (``"deny"``, ``"no"``,
  ``"n"``, ``"reject"``, ``"false"``); ``"decline"`` / ``"cancel"`` refuse (a permission is denied);
* deny and tell agy why: a deny word, a colon and the reason (``"no: use make clean instead"``), or
  ``GateAnswer(allow=False, deny_reason=...)`` (agy's ``userDenyInstruction``); a reason with an allow
  is refused;
* a lasting grant: ``GateAnswer(allow=True, scope=...)`` or the text forms ``"allow once"``,
  ``"allow conversation"``, ``"allow workspace"``, ``"allow project"``, ``"allow always"`` (also
  ``"allow global"``): only with an allow, and only a scope the gate lists in ``scopes`` (``once``,
  or no scope, is always a plain allow); anything else is refused;
* edit, then run: ``GateAnswer(allow=True, edited_command=...)`` or ``"edit: <command line>"``: only
  on a gate whose ``editable`` is True, only with an allow, never empty; the checked answer binds
  the edited text (:attr:`CheckedAnswer.command_digest`);
* a denial with a reason only where agy's answer carries one (``permission.userDenyInstruction``;
  a ``runCommand`` answer has no such field: refused);
* "allow always" (``GateAnswer(allow=True, persist=...)``, the TUI-key fallback route) only with an
  allow and never with a ``scope``: with anything else (a denial, a question) it is refused;
* anything else (``None``, ``""``, ``[]``, ``1``, ``"maybe"``, ``GateAnswer()`` without ``allow``)
  raises :class:`AnswerError` -- never an approval.

Question gates (ask_question):

* ``"2"`` (an option id) or an option's label (exact, else with case and spaces ignored) picks
  that option (refused where it could name several, or names an option whose id another shares:
  agy's answer carries only the id); ``["1", "3"]`` several (a
  multi-select), or one per question when the gate has several questions; ``[["1"], ["2", "3"]]``
  one list per question; ``GateAnswer(selections=..., write_ins=...)`` as is;
* the write-in rule: non-empty text that is not a number and matches no option's id or label is
  sent as the question's write-in (``writeInResponse``);
* ``False``, ``"decline"``, ``"cancel"`` refuse;
* refused with :class:`AnswerError`: ``True`` (which option?), an empty answer, a question left
  without any choice or write-in, a number that is no option's id, several choices for a
  single-select question, more answers than questions, values that are not text.

A request the reader cut (a string agy sent over 4 MiB, :mod:`.cut_marks`) cannot be shown whole
anywhere: an allow of it is refused (say why); a denial goes through.

Every gate: a gate no known payload answers (kind ``other``, or not ``answerable``) takes no answer at
all, not even a decline (only agy's own terminal can answer it); a checked answer given for another
gate (another id or digest) is refused.

Pure: imports only ports and stdlib.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .answer_questions import (
    QUESTION_FORMS,
    _question,
    _question_verdict,
    match_option,
    resolve_question,
    texts,
)
from .content import checked_content
from .cut_marks import cuts_in
from .scopes import SCOPE_WORDS  # ``allow <word>``: allow with a lasting grant; ``allow`` alone is once
from .verdicts import (
    ACCEPT_WORD,
    ALLOW_WORDS,
    DENY_WORDS,
    REFUSE_WORDS,
    Allow,
    AnswerError,
    Choose,
    Deny,
    Refuse,
    Response,
    Verdict,
    _show,
    fold,
)

__all__ = [
    "ALLOW_WORDS",
    "DENY_WORDS",
    "QUESTION_FORMS",
    "REFUSE_WORDS",
    "Allow",
    "AnswerError",
    "CheckedAnswer",
    "Choose",
    "Deny",
    "Refuse",
    "Response",
    "Verdict",
    "carries_reason",
    "check_answer",
    "fold",
    "loose_verdict",
    "match_option",
    "parse_answer",
    "resolve_question",
    "texts",
]

EDIT_WORD = "edit"  # "edit: <command line>": allow the edited command

PERMISSION_FORMS = (
    f"True / {' / '.join(map(repr, sorted(ALLOW_WORDS)))} to allow; "
    "'allow conversation' / 'allow workspace' / 'allow project' / 'allow always' for a lasting grant "
    "the request offers; 'edit: <command>' to run an edited command where it may be edited; "
    f"False / {' / '.join(map(repr, sorted(DENY_WORDS)))} to deny; "
    "'deny: <reason>' to deny and tell agy why; 'decline' / 'cancel' to refuse; "
    "'accept: <JSON object>' to accept an MCP server's request with that content"
)


class CheckedAnswer(GateAnswer):
    """An answer :func:`parse_answer` read for one gate: bound to it (``gate_id``, ``digest``) and
    carrying its ``verdict``. Its GateAnswer fields keep the loose form it was read from (what a sink
    shows or returns); what reaches agy is decided by the verdict alone. Made only by
    :func:`parse_answer`; a copy with changes is a plain :class:`GateAnswer`, read anew."""

    gate_id: str
    digest: str
    verdict: Verdict

    @property
    def command_digest(self) -> str:
        """The digest of what this answer approves to run: the gate's request digest and, for an edited
        command, the edited text (so an edited approval names exactly the edited command); "" for an
        answer that edits nothing."""
        verdict = self.verdict
        if not isinstance(verdict, Allow) or verdict.command is None:
            return ""
        text = f"{self.digest}\n{verdict.command}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(text).hexdigest()[:32]

    def bound_to(self, gate: GateOpened) -> bool:
        """Whether this answer was read for exactly ``gate`` (the same id and request digest)."""
        return self.gate_id == gate.gate_id and self.digest == gate.digest

    def loose(self) -> GateAnswer:
        """The loose form it was read from."""
        return GateAnswer(**{name: getattr(self, name) for name in GateAnswer.model_fields})

    def model_copy(  # type: ignore[override]  # an edited answer is no longer the checked one
        self, *, update: dict[str, Any] | None = None, deep: bool = False
    ) -> GateAnswer:
        return self.loose().model_copy(update=update, deep=deep)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CheckedAnswer):
            return (self.gate_id, self.digest, self.verdict, self.loose()) == (
                other.gate_id,
                other.digest,
                other.verdict,
                other.loose(),
            )
        if isinstance(other, GateAnswer):  # it reads as the answer it was read from
            return self.loose() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.gate_id, self.digest, self.verdict))


def _checked(gate: GateOpened, answer: GateAnswer, verdict: Verdict) -> CheckedAnswer:
    fields = {name: getattr(answer, name) for name in GateAnswer.model_fields}
    return CheckedAnswer(**fields, gate_id=gate.gate_id, digest=gate.digest, verdict=verdict)


# -- reading ---------------------------------------------------------------------------------------


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
        if colon and fold(head) == EDIT_WORD:
            if not reason.strip():
                raise AnswerError("'edit:' needs the command line to run")
            return GateAnswer(allow=True, edited_command=reason.strip())  # allow the edited command
        if colon and fold(head) == ACCEPT_WORD:  # accept with content (an MCP elicitation's)
            if not reason.strip():
                raise AnswerError("'accept:' needs the content: a JSON object")
            return GateAnswer(allow=True, content=reason.strip())
        if word == ACCEPT_WORD:
            return GateAnswer(allow=True)
        first, _, rest = word.partition(" ")
        if first in ALLOW_WORDS and rest in SCOPE_WORDS:
            scope = SCOPE_WORDS[rest]
            return GateAnswer(allow=True, scope=None if scope == "once" else scope)
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


def _how(gate: GateOpened, answer: GateAnswer) -> Literal["deny", "cancel"]:
    """A cancel is its own answer only where agy's message tells it from a decline (an elicitation's
    ``action: cancel``); anywhere else it denies."""
    return "cancel" if answer.action == "cancel" and gate.interaction == "elicitation" else "deny"


#: agy's answer messages that carry a denial's reason (``userDenyInstruction``; the file-edit
#: review's reject: ``writtenFeedback``, :mod:`.code_review`)
_REASONED = frozenset({"permission", "codeAction"})


def carries_reason(gate: GateOpened) -> bool:
    """Whether agy's answer to ``gate`` can carry a denial's reason (``userDenyInstruction``): a
    ``runCommand`` answer cannot (a reason given there is refused; a surface offers one only where it can)."""
    return not gate.interaction or gate.interaction in _REASONED


def _permission_verdict(gate: GateOpened, answer: GateAnswer) -> Allow | Deny:
    lasting = answer.scope is not None and answer.scope != "once"
    if answer.action == "accept" and answer.allow is True:
        if answer.deny_reason.strip():
            raise AnswerError("a reason goes with a denial, not with an allow")
        if lasting and answer.scope not in gate.scopes:
            offered = ", ".join(gate.scopes) or "once only"
            raise AnswerError(f"this request does not offer the scope {answer.scope!r} (offered: {offered})")
        if lasting and answer.persist is not None:
            raise AnswerError("a scope and allow-always are two routes to one grant: give one")
        command: str | None = None
        if answer.edited_command:
            if not gate.editable:
                raise AnswerError("this request's command cannot be edited before it runs")
            if not answer.edited_command.strip():
                raise AnswerError("an edited command cannot be empty")
            command = answer.edited_command
        if answer.sandbox_override and gate.interaction != "runCommand":
            raise AnswerError("only a command can be run outside agy's sandbox")
        if answer.content and gate.interaction != "elicitation":
            raise AnswerError("content goes only with accepting an MCP server's request for input")
        content = checked_content(gate, answer.content) if answer.content else None
        if gate.no_allow and content is None:
            raise AnswerError(f"this request cannot be allowed from here: {gate.no_allow}")
        scope = answer.scope if lasting else None
        return Allow(answer.persist, scope, command, content, answer.sandbox_override)
    if answer.content:
        raise AnswerError("content goes with an accept, not with a decline")
    if answer.sandbox_override:
        raise AnswerError("running outside the sandbox goes with an allow, not with a denial")
    if answer.persist is not None:
        raise AnswerError("allow always applies only to allowing a permission")
    if lasting:
        raise AnswerError("a scope goes with an allow, not with a denial")
    if answer.edited_command:
        raise AnswerError("an edited command goes with an allow, not with a denial")
    reason = answer.deny_reason.strip()
    if reason and not carries_reason(gate):
        raise AnswerError("agy's answer to this request carries no reason: deny without one")
    return Deny(reason, _how(gate, answer))


def _answerable(gate: GateOpened) -> None:
    if not gate.answerable or gate.kind == "other":
        raise AnswerError("agy waits for this in its own terminal; it cannot be answered from here")


def _whole(gate: GateOpened) -> None:
    """Refuse an allow of a request that was cut: nowhere can its whole text be shown; and of a
    ``runCommand`` whose request proposes another line than the one its card shows (the step's): the
    answer would submit a command no human saw."""
    p = gate.permission
    proposed = gate.request.get("proposedCommandLine") if gate.interaction == "runCommand" else None
    shown = p.command_line if p is not None else ""
    if isinstance(proposed, str) and proposed and proposed != shown:
        raise AnswerError(
            f"agy's request proposes {proposed!r} but its step (what the card shows) runs {shown!r}: "
            "it cannot be allowed from here; deny it, or answer in agy's terminal"
        )
    cut = next(cuts_in([gate.request, p.model_dump() if p is not None else None]), None)
    if cut is not None:
        raise AnswerError(
            f"this request was cut ({cut.removed} of its {cut.total} bytes not shown, sha256:{cut.short}): "
            "it cannot be shown whole, so it cannot be allowed from here; deny it, or answer in agy's terminal"
        )


def parse_answer(gate: GateOpened, value: object) -> CheckedAnswer:
    """``value`` as a :class:`CheckedAnswer` for ``gate``; raises :class:`AnswerError` (a ValueError
    naming the accepted forms) for anything that is not unambiguous. See the module doc. A checked
    answer already bound to ``gate`` is returned as it is (it is not read twice)."""
    if isinstance(value, CheckedAnswer):
        if value.bound_to(gate):
            return value
        raise AnswerError("this answer was read for another request; nothing was sent")
    _answerable(gate)
    if gate.kind == "permission":
        answer = _permission(value)
        verdict = _permission_verdict(gate, answer)
        if isinstance(verdict, Allow):
            _whole(gate)
        return _checked(gate, answer, verdict)
    answer = _question(gate, value)
    return _checked(gate, answer, _question_verdict(gate, answer))


def check_answer(gate: GateOpened, answer: GateAnswer) -> None:
    """Raise :class:`AnswerError` unless ``answer`` is an unambiguous answer to ``gate``
    (:func:`parse_answer`, its result set aside)."""
    parse_answer(gate, answer)


def loose_verdict(gate: GateOpened, answer: GateAnswer) -> Verdict:
    """The verdict of a checked answer; for a loose :class:`GateAnswer` handed to the pure helpers
    directly (the payload builder, key typing), a permission reads fail-closed -- only an explicit
    allow approves, anything else denies -- and a question is parsed (:class:`AnswerError` if it
    leaves a question unanswered or ambiguous: never sent empty)."""
    if isinstance(answer, CheckedAnswer):
        return answer.verdict
    if gate.kind == "permission":
        if answer.action == "accept" and answer.allow is True:
            _whole(gate)
            return _permission_verdict(gate, answer)  # a scope or an edit it cannot honour: refused
        return Deny(answer.deny_reason.strip(), _how(gate, answer))
    return parse_answer(gate, answer).verdict
