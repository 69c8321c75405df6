"""What the decision ledger keeps of a gate and its answer: the redacted rendering of what was shown,
the verdict in one word, its scope, the body of the ledger's ``decision`` record, and what an
``outcome`` record says ran (:func:`ran_fields`). Pure.

Redaction: what the human saw is kept whole (``core.display``'s one rendering rule), except values
that look like secrets -- ``password=...``, ``token: ...``, ``Authorization: Bearer ...``, ``-p...``
after a ``--password`` flag, and long random-looking words (40+ base64/hex characters) -- which become
``<redacted N chars>``. The request's digest (``core.binding``) still names the exact request.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from agy_harness.ports.events import GateOpened

from . import steps as S
from .answers import Allow, CheckedAnswer, Choose, Deny, Refuse
from .display import HASH_CHARS, one_line, text_notes, visible
from .elicitation import proposed_command

SHOWN_CHARS = 2000
_SECRET_KEY = re.compile(
    r"(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth(?:orization)?)"
    r"[\"']?\s*(?:[=:]|\s)\s*(?:bearer\s+|basic\s+)?[\"']?)([^\s\"',;]+)"
)
_LONG_WORD = re.compile(r"[A-Za-z0-9+/_\-]{40,}={0,2}")


def _mask(match: re.Match[str]) -> str:
    return f"{match.group(1)}<redacted {len(match.group(2))} chars>"


def redact(text: str) -> str:
    """``text`` with what looks like a secret replaced (see the module doc)."""
    text = _SECRET_KEY.sub(_mask, text)
    return _LONG_WORD.sub(lambda m: f"<redacted {len(m.group(0))} chars>", text)


def shown(gate: GateOpened) -> str:
    """What the human was asked, as one redacted text (bounded)."""
    if gate.kind == "permission" and gate.permission is not None:
        p = gate.permission
        what = p.command_line or p.target or p.description or p.action
        text = f"{gate.tool_name}: {what}" + (f"  (in {p.cwd})" if p.cwd else "")
    elif gate.kind == "question":
        text = " | ".join(
            q.question + " [" + ", ".join(f"{o.id}={o.text}" for o in q.options) + "]" for q in gate.questions
        )
    else:
        text = gate.interaction or gate.tool_name or "an action"
    return _bounded(redact(visible(text)))


def _bounded(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"… [{len(text)} chars]"


def verdict_of(answer: CheckedAnswer) -> tuple[str, dict[str, Any]]:
    """allow / deny / choose / refuse, and what goes with it (a reason, the options picked)."""
    v = answer.verdict
    if isinstance(v, Allow):
        detail: dict[str, Any] = {"persist": v.persist} if v.persist else {}
        if v.command is not None:  # edit, then run: what was approved is the edited line
            detail["edited_command"] = _bounded(redact(visible(v.command)))
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


def recorded_verdict(gate: GateOpened, response: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
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
            detail["edited_command"] = _bounded(redact(visible(submitted)))
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


def _text(field: str, text: str) -> dict[str, Any]:
    """``text`` as the ledger keeps a command (redacted, bounded) and the SHA-256 of the exact text."""
    return {
        field: _bounded(redact(text)),
        f"{field}_sha256": hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(),
    }


def ran_fields(proposed: str, approved: str | None, ran: str | None, unread: str = "") -> dict[str, Any]:
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
        else {**_text("command", ran), "ran_from": "step"}
    )
    if proposed and proposed != ran:
        out.update(_text("proposed", proposed))
    if approved is not None and approved != ran:
        out.update(_text("approved", approved))
    return out


def decision_body(
    gate: GateOpened,
    verdict: str,
    detail: dict[str, Any],
    scope: str,
    decided_by: dict[str, Any],
    latency_ms: int | None,
) -> dict[str, Any]:
    """The body of a ``decision`` record."""
    return {
        "conversation": gate.cascade_id,
        "gate_id": gate.gate_id,
        "step": gate.step_key,
        "kind": gate.kind,
        "interaction": gate.interaction,
        "tool": gate.tool_name,
        "request_digest": gate.digest,
        "shown": shown(gate),
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
