"""What the decision ledger keeps of a gate and its answer: the redacted rendering of what was shown,
the verdict in one word, its scope, and the body of the ledger's ``decision`` record. Pure.

Redaction: what the human saw is kept whole (``core.display``'s one rendering rule), except values
that look like secrets -- ``password=...``, ``token: ...``, ``Authorization: Bearer ...``, ``-p...``
after a ``--password`` flag, and long random-looking words (40+ base64/hex characters) -- which become
``<redacted N chars>``. The request's digest (``core.binding``) still names the exact request.
"""

from __future__ import annotations

import re
from typing import Any

from agy_harness.ports.events import GateOpened

from . import steps as S
from .answers import Allow, CheckedAnswer, Choose, Deny, Refuse
from .display import visible

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
        return "allow", detail
    if isinstance(v, Deny):
        return "deny", ({"reason": redact(v.reason)} if v.reason else {})
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
        if run.get("confirm") is True and isinstance(submitted, str) and submitted != run.get("proposedCommandLine"):
            detail["edited_command"] = _bounded(redact(visible(submitted)))
        return ("allow" if run.get("confirm") is True else "deny"), detail
    for value in response.values():
        accepted = S.as_dict(value).get("accepted")
        if isinstance(accepted, bool):
            return ("allow" if accepted else "deny"), {}
    return "unknown", {}


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
        "tool": gate.tool_name,
        "request_digest": gate.digest,
        "shown": shown(gate),
        "verdict": verdict,
        "detail": detail,
        "scope": scope,
        "decided_by": decided_by,
        "latency_ms": latency_ms,
    }
