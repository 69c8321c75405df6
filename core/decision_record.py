"""What the decision ledger keeps of a gate and its answer: the redacted rendering of what was shown,
the verdict in one word, its scope, the body of the ledger's ``decision`` record, and what an
``outcome`` record says ran (:func:`ran_fields`). Pure.

Redaction: what the human saw is kept whole (``core.display``'s one rendering rule), except values
that look like secrets, which become ``<redacted N chars>``. The request's digest (``core.binding``)
still names the exact request. A command line is read by its parsed arguments when the recorder has a
reader for them (``redact_command``: the ledger's, ``adapters/policy/secrets.py``: ``mysql -pPW``,
``curl -u user:PW``, ``--password PW``, ``PGPASSWORD=PW`` ...); every text, commands included, then
goes through :func:`redact`: URL user-info (``postgres://user:PW@host``), ``password=…``,
``token: …``, ``Authorization: Bearer …`` (a key, then ``=`` or ``:``; only ``password``/``passwd``
also take a plain space), and long random-looking words (40+ base64/hex characters). Words that only
name a secret -- ``pwd``, ``echo token`` -- are kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agy_harness.ports.events import GateOpened

from . import steps as S
from .answers import Allow, CheckedAnswer, Choose, Deny, Refuse
from .display import HASH_CHARS, one_line, text_notes, visible
from .elicitation import proposed_command

SHOWN_CHARS = 2000
_VALUE = r"(?!<redacted )([^\s\"',;&|]+)"
_SECRET_KEY = re.compile(  # a key, ``=`` or ``:``, the value (a scheme such as Bearer before it)
    r"(?i)((?<![A-Za-z])(?:(?:[A-Za-z0-9]+[_-])*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|auth|authorization)|(?:[A-Za-z0-9]+[_-])+pwd)[\"']?[ \t]*[=:][ \t]*(?:(?:bearer|basic|token)[ \t]+)?[\"']?)"
    + _VALUE
)
_SPOKEN_KEY = re.compile(r"(?i)((?<![A-Za-z-])(?:password|passwd)[ \t]+)" + _VALUE)  # "password hunter2"
#: scheme://user:PW@host (PW up to the last ``@`` before the host: a password may hold one)
_USER_INFO = re.compile(
    r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)([^/\s]*?[^/\s@])(?=@[^@/\s]*(?:[/?#\s'\";|&)]|$))"
)
_LONG_WORD = re.compile(r"[A-Za-z0-9+/_\-]{40,}={0,2}")


def _mask(match: re.Match[str]) -> str:
    return f"{match.group(1)}<redacted {len(match.group(2))} chars>"


#: what every match of :data:`_SECRET_KEY` holds, case aside (its key's words: ``api``, ``access``,
#: ``private`` stand for their ``...key``; ``passw`` for password and passwd)
_KEY_WORDS = ("passw", "secret", "token", "api", "access", "private", "auth", "pwd")


#: the characters other than ASCII letters that ``re``'s case folding (``(?i)``) matches to an ASCII
#: letter: ``İ`` and ``ı`` to ``i``, ``ſ`` to ``s``, the Kelvin sign to ``k`` (every code point tried)
_FOLDS = ("\u0130", "\u0131", "\u017f", "\u212a")


def _may_hold(text: str, words: Sequence[str], marks: str = "") -> bool:
    """Whether a rule whose every match holds one of ``words`` (case-insensitively) and, when
    ``marks`` are given, one of those characters could match ``text``. Exact, never a guess: a match's
    word is ASCII letters of either case, or one of :data:`_FOLDS`; text holding none of those is
    looked at in lower case (each ASCII letter lowers to itself, so the word stays whole), text
    holding one is always given to the rule. A rule a 4 MiB command could not match scanned it in
    0.3-0.8 s."""
    if marks and not any(mark in text for mark in marks):
        return False
    if not text.isascii() and any(fold in text for fold in _FOLDS):
        return True
    low = text.lower()
    return any(word in low for word in words)


def redact(text: str, *, spoken: bool = True) -> str:
    """``text`` with what looks like a secret replaced (see the module doc). ``spoken``: also the word
    after a bare ``password``/``passwd`` (prose; not in a command line, whose arguments say which word
    is a password: ``grep password src/``, ``passwd alice`` hold none). A rule is run only where it
    could match (:func:`_may_hold`: the same text out, each rule's scan saved where it cannot)."""
    if "://" in text:  # (every URL user-info match holds it)
        text = _USER_INFO.sub(_mask, text)
    if _may_hold(text, _KEY_WORDS, "=:"):  # (every key is followed by ``=`` or ``:``)
        text = _SECRET_KEY.sub(_mask, text)
    if spoken and _may_hold(text, ("passw",)):
        text = _SPOKEN_KEY.sub(_mask, text)
    return _LONG_WORD.sub(lambda m: f"<redacted {len(m.group(0))} chars>", text)


def mask_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each character range of ``spans`` (overlapping ones merged) replaced by
    ``<redacted N chars>``."""
    out, at = [], 0
    for start, end in sorted(spans):
        start = max(start, at)
        if end <= start:
            continue
        out.append(text[at:start] + f"<redacted {end - start} chars>")
        at = end
    return "".join(out) + text[at:]


def mask_values(text: str, values: Iterable[str]) -> str:
    """``text`` with each occurrence of a secret of ``values`` (those a command line held: its output
    may show them) replaced by ``<redacted N chars>``; one shorter than four characters only as a word
    of its own (not inside another word)."""
    for value in sorted(set(values), key=len, reverse=True):
        if not value:
            continue
        alone = r"(?<![A-Za-z0-9])" if len(value) < 4 else ""
        pattern = alone + re.escape(value) + (r"(?![A-Za-z0-9])" if alone else "")
        text = re.sub(pattern, f"<redacted {len(value)} chars>", text)
    return text


def output_tail(output: str, secrets: Sequence[str], keep: int) -> str:
    """The last ``keep`` characters of a tool's output, redacted: the secrets its command
    held masked wherever it printed them (read a little further back, so none is cut in two), then
    the free-text rules; a cut never splits a ``<redacted N chars>`` mark."""
    window = output[-(keep + max(map(len, secrets), default=0)) :]
    text = redact(mask_values(window, secrets))
    if len(text) <= keep:
        return text
    cut = len(text) - keep
    mark = text.rfind("<redacted ", 0, cut)
    if mark >= 0 and text.find(">", mark) >= cut:
        cut = mark
    return text[cut:]


#: how a command line is redacted (:func:`redact`, or a reader of its arguments)
Redactor = Callable[[str], str]


def shown(gate: GateOpened, command: Redactor = redact) -> str:
    """What the human was asked, as one redacted text (bounded); a command line by ``command``."""
    if gate.kind == "permission" and gate.permission is not None:
        p = gate.permission
        what = command(p.command_line) if p.command_line else redact(p.target or p.description or p.action)
        cwd = f"  (in {redact(p.cwd)})" if p.cwd else ""
        return _bounded(visible(f"{redact(gate.tool_name)}: {what}{cwd}"))
    if gate.kind == "question":
        text = " | ".join(
            q.question + " [" + ", ".join(f"{o.id}={o.text}" for o in q.options) + "]" for q in gate.questions
        )
    else:
        text = gate.interaction or gate.tool_name or "an action"
    return _bounded(redact(visible(text)))


def _bounded(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"… [{len(text)} chars]"


def verdict_of(answer: CheckedAnswer, command: Redactor = redact) -> tuple[str, dict[str, Any]]:
    """allow / deny / choose / refuse, and what goes with it (a reason, the options picked)."""
    v = answer.verdict
    if isinstance(v, Allow):
        detail: dict[str, Any] = {"persist": v.persist} if v.persist else {}
        if v.command is not None:  # edit, then run: what was approved is the edited line
            detail["edited_command"] = _bounded(visible(command(v.command)))
            detail["command_digest"] = answer.command_digest
        if v.content is not None:  # an MCP elicitation's content, as sent
            detail["content"] = _bounded(redact(visible(v.content)))
        if v.sandbox_override:
            detail["sandbox_override"] = True
        return "allow", detail
    if isinstance(v, Deny):
        how = {"how": "cancel"} if v.how == "cancel" else {}
        return "deny", ({"reason": redact(v.reason), **how} if v.reason else how)
    if isinstance(v, Choose):
        picked = [{"options": list(r.option_ids), "write_in": redact(r.write_in)} for r in v.responses]
        return "choose", {"responses": picked}
    assert isinstance(v, Refuse)
    return "refuse", {"action": v.action}


def scope_of(answer: CheckedAnswer) -> str:
    """The answer's scope: its own ``scope`` when answers carry one, else agy's "allow always"
    (``session``: this conversation; ``always``: agy's settings), else once."""
    scope = getattr(answer, "scope", None)
    if scope:
        return str(scope)
    if isinstance(answer.verdict, Allow) and answer.verdict.persist is not None:
        return "conversation" if answer.verdict.persist == "session" else "global"
    return "once"


def recorded_verdict(
    gate: GateOpened, response: dict[str, Any] | None, command: Redactor = redact
) -> tuple[str, dict[str, Any]]:
    """The verdict of an answer agy recorded itself (``completedInteractions``: its own terminal)."""
    if not response:
        return "unknown", {}
    if "permission" in response:
        return ("allow" if S.as_dict(response["permission"]).get("allow") is True else "deny"), {}
    if "askQuestion" in response:
        responses = S.as_list(S.as_dict(response["askQuestion"]).get("responses"))
        if not responses:
            return "refuse", {}
        picked = [
            {
                "options": [str(o) for o in S.as_list(S.as_dict(r).get("selectedOptionIds"))],
                "write_in": redact(str(S.as_dict(r).get("writeInResponse") or "")),
            }
            for r in responses
        ]
        return "choose", {"responses": picked}
    if "runCommand" in response:  # {confirm, proposedCommandLine, submittedCommandLine}
        run = S.as_dict(response["runCommand"])
        detail: dict[str, Any] = {}
        submitted = run.get("submittedCommandLine")
        if (
            run.get("confirm") is True
            and isinstance(submitted, str)
            and submitted != run.get("proposedCommandLine")
        ):
            detail["edited_command"] = _bounded(visible(command(submitted)))
        return ("allow" if run.get("confirm") is True else "deny"), detail
    for field, value in response.items():
        message = S.as_dict(value)
        if field == "deploy":  # an empty deploy {} proceeds; the deny is cancel: true
            return ("deny" if message.get("cancel") is True else "allow"), {}
        if field == "elicitation":
            return ("allow" if message.get("action") == "accept" else "deny"), {}
        for key in ("confirm", "allow", "accepted"):  # {confirm} kinds, filePermission, a setting gate
            if isinstance(message.get(key), bool):
                return ("allow" if message[key] else "deny"), {}
        if field in ("openBrowserUrl", "mcp", "readUrlContent", "filePermission") or message == {}:
            return "deny", {}  # proto-JSON omits a false confirm / allow
    return "unknown", {}


def recorded_command(gate: GateOpened, response: dict[str, Any] | None) -> str | None:
    """The command line an answer agy recorded itself approved (its own terminal): a confirmed
    ``runCommand``'s submitted line (else its proposal), agy's proposal on an allowed permission;
    None when it approved no command."""
    if not response:
        return None
    proposed = proposed_command(gate)
    if "runCommand" in response:
        run = S.as_dict(response["runCommand"])
        if run.get("confirm") is not True:
            return None
        submitted = run.get("submittedCommandLine")
        return submitted if isinstance(submitted, str) and submitted else (proposed or None)
    if "permission" in response and S.as_dict(response["permission"]).get("allow") is True:
        return proposed or None
    return None


def _text(field: str, text: str, command: Redactor) -> dict[str, Any]:
    """``text`` as the ledger keeps a command (redacted, bounded) and the SHA-256 of the exact text."""
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    return {field: _bounded(command(text)), f"{field}_sha256": digest}


def ran_fields(
    proposed: str, approved: str | None, ran: str | None, unread: str = "", command: Redactor = redact
) -> dict[str, Any]:
    """What an ``outcome`` record says of a command gate's step: what ran, as agy's step shows it after
    the answer (``command``, ``command_sha256``, ``ran_from: "step"``; when it could not be read,
    ``command`` is empty, ``ran_from: "unread"`` and ``unread`` says why); and, each only where it
    differs from what ran, what agy proposed (``proposed``: the card's line) and what the human approved
    (``approved``: the edit, else the proposal; None for a denial). ``approved`` present means it ran
    something other than what was approved (a hook rewrote it); ``proposed`` alone, that the edit ran.
    Records written before these fields have no ``ran_from``: their ``command`` is agy's proposal."""
    out: dict[str, Any] = (
        {"command": "", "ran_from": "unread", "unread": unread}
        if ran is None
        else {**_text("command", ran, command), "ran_from": "step"}
    )
    if proposed and proposed != ran:
        out.update(_text("proposed", proposed, command))
    if approved is not None and approved != ran:
        out.update(_text("approved", approved, command))
    return out


def decision_body(
    gate: GateOpened,
    verdict: str,
    detail: dict[str, Any],
    scope: str,
    decided_by: dict[str, Any],
    latency_ms: int | None,
    command: Redactor = redact,
) -> dict[str, Any]:
    """The body of a ``decision`` record (a command line redacted by ``command``)."""
    return {
        "conversation": gate.cascade_id,
        "gate_id": gate.gate_id,
        "step": gate.step_key,
        "kind": gate.kind,
        "interaction": gate.interaction,
        "tool": gate.tool_name,
        "request_digest": gate.digest,
        "shown": shown(gate, command),
        "verdict": verdict,
        "detail": detail,
        "scope": scope,
        "decided_by": decided_by,
        "latency_ms": latency_ms,
    }


def ran_note(verdict: str, outcome: dict[str, Any] | None) -> str:
    """What ``agy-harness audit`` adds to a decision's line from its ``outcome`` record (:func:`ran_fields`):
    nothing when what ran is what was shown (or the record predates ``ran_from``: it claims nothing);
    the edit that ran; a command that ran other than what was approved, with both texts (and their
    hashes where they render alike); an allowed command whose run could not be read, and why."""
    if not outcome or outcome.get("ran_from") not in ("step", "unread"):
        return ""
    if outcome["ran_from"] == "unread":
        why = str(outcome.get("unread") or "")
        return f"what ran was not read from agy's step ({why})" if verdict == "allow" else ""
    ran = str(outcome.get("command", ""))
    if "approved" in outcome:
        approved = str(outcome["approved"])
        text = f"⚠ ran `{ran}`, not what was approved: `{approved}`"
        notes = text_notes(ran)
        if one_line(ran) == one_line(approved) or notes or text_notes(approved):  # as the notice says it
            ran_hash, approved_hash = (
                str(outcome.get(f"{k}_sha256", ""))[:HASH_CHARS] for k in ("command", "approved")
            )
            said = "; ".join(one_line(n) for n in notes)
            text += f" (ran #{ran_hash}, approved #{approved_hash}" + (f"; ran: {said})" if said else ")")
        return text
    if "proposed" in outcome:
        proposed = str(outcome["proposed"])
        if verdict == "allow":
            return f"ran the edited command `{ran}` (agy proposed `{proposed}`)"
        return f"agy's step shows `{ran}`, not the proposed `{proposed}`"
    return ""
