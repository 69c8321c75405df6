"""Reading the page's answer (:func:`answer_value`, :func:`unreadable`), and why an answer from the
board did not reach agy, in words a person acts on.

The harness refuses an answer that would not reach the request it was given for (the gate's
digest): another front end answered it first, agy stopped waiting, or agy now asks something else.
It says which in the gate's withdrawal (``GateWithdrawn.reason``, :mod:`agy_harness.core.gate_book`)
and in a notice (the refusal's detail, :mod:`agy_harness.core.elicitation`); these map them to
what the board answers: 410 (no longer waiting: who or what ended it), 409 (the request changed:
answer the new card), 503 (agy did not take it: nothing was delivered, answer again).
"""

from __future__ import annotations

from typing import Any

from agy_harness.adapters.sinks.escape import visible
from agy_harness.core.answers import AnswerError
from agy_harness.core.scopes import SCOPES
from agy_harness.ports.events import GATE_SET_ASIDE, GateOpened
from agy_harness.ports.protocols import GateAnswer

from ...root.session import AnswerLike

ANSWERED_ELSEWHERE = (
    "answered elsewhere (in agy's terminal, on ACP, in omnigent or on another board): "
    "agy has moved on, and nothing was sent from here"
)
CHANGED = "the request changed: agy now asks something else; nothing was sent. Answer the new card"


class GateGone(Exception):
    """410: no such gate waits (answered elsewhere, timed out, or never asked here)."""


class StaleCard(Exception):
    """409: the answer was given for a card that is no longer what agy asks."""


class NotLoaded(Exception):
    """400: an allow of a request too large for its card, whose whole text this page never loaded."""


class NotTaken(Exception):
    """503: agy did not take the answer (unreachable, or it refused it); nothing was delivered."""


def withdrawn(reason: str) -> Exception:
    """The outcome for an answer to a gate withdrawn for ``reason`` (GateWithdrawn.reason)."""
    if reason == "answered":
        return GateGone(ANSWERED_ELSEWHERE)
    if reason.startswith("changed"):
        return StaleCard(CHANGED)
    if reason == "timed out":
        return GateGone("agy stopped waiting for this (the request timed out); nothing was sent")
    if reason == GATE_SET_ASIDE:
        return GateGone(
            "agy refused the answer to this request: it is set aside; nothing was sent; answer it in agy's terminal"
        )
    if reason:
        return GateGone(f"agy no longer waits for this ({reason}); nothing was sent")
    return GateGone("no such request waits on this board; nothing was sent")


def refused(notice: str) -> Exception:
    """The outcome for an answer the harness did not deliver, from the notice it gave."""
    text = notice.lower()
    if "request changed" in text or "now asking something else" in text:
        return StaleCard(CHANGED)
    if "already answered" in text or "already took an answer" in text or "another answer" in text:
        return GateGone(ANSWERED_ELSEWHERE)
    if "timed out" in text:
        return GateGone("agy stopped waiting for this (the request timed out); nothing was sent")
    if "is gone" in text or "step ended" in text:
        return GateGone("agy no longer waits for this; nothing was sent")
    if "set aside" in text:  # agy refuses any answer to it: its card retires, never answered again
        return GateGone(
            f"agy refused the answer and this request is set aside ({notice}); nothing was delivered"
        )
    if "did not take the answer within" in text:
        return NotTaken("agy did not take the answer in time; nothing was delivered. Answer again")
    if notice:
        return NotTaken(f"agy did not take the answer ({notice}); nothing was delivered. Answer again")
    return NotTaken("agy did not take the answer; nothing was delivered. Answer again")


def unreadable(gate: GateOpened, raw: Any) -> str | None:
    """What to do, in words, when the page's answer ``raw`` cannot be an answer to ``gate`` (None:
    it may be; the fail-closed parser still reads it). Nothing is sent for an answer refused here."""
    if isinstance(raw, dict) and set(raw) == {"accept"}:  # content typed for an MCP server's request
        if gate.interaction != "elicitation":
            return "content goes only with an MCP server's request for input: use the card's buttons"
        if not isinstance(raw["accept"], str) or not raw["accept"].strip():
            return "type the content it asks for (a JSON object), or Decline"
        return None
    if raw in ("allow", "deny", "decline") or (isinstance(raw, dict) and set(raw) in ({"deny"}, {"allow"})):
        if gate.kind == "question" and raw != "decline":
            return "this is a question: pick an option or write your own answer, or Decline"
        if gate.kind == "permission" and raw == "decline":
            return "this asks to run a command: Allow it or Deny it"
        how = raw.get("allow") if isinstance(raw, dict) else None
        if isinstance(how, dict):
            scope = how.get("scope", "once")
            if scope != "once" and scope not in gate.scopes:
                return "agy does not offer this lasting allow for this request; use one of the card's buttons"
            if how.get("command") and not gate.editable:
                return "this request's command cannot be edited before it runs: Allow it as shown or Deny it"
            if isinstance(how.get("command"), str) and how["command"] and not how["command"].strip():
                return "an edited command cannot be empty: write the command to run, or Deny"
        return None
    if not (isinstance(raw, dict) and isinstance(raw.get("questions"), list)):
        return "the board could not read this answer; reload the page and answer again"
    if gate.kind != "question":
        return "this asks to run a command: Allow it or Deny it"
    answers = raw["questions"]
    if len(answers) != len(gate.questions):
        return "this answer is for other questions than agy asks now; reload the page and answer again"
    for question, given in zip(gate.questions, answers, strict=True):
        if not isinstance(given, dict):
            return "the board could not read this answer; reload the page and answer again"
        choices, write_in = given.get("choices", []), given.get("write_in", "")
        name = f"“{visible(question.question)}”"
        known = {o.id for o in question.options}
        if not isinstance(choices, list) or not isinstance(write_in, str):
            return "the board could not read this answer; reload the page and answer again"
        if any(c not in known for c in choices):
            return f"an option picked for {name} is not one agy offers now; reload the page and answer again"
        picked = len(choices) + (1 if write_in.strip() else 0)
        if picked == 0:
            return f"{name} has no answer yet: pick an option or write your own answer (or Decline)"
        if picked > 1 and not question.multi_select:
            if write_in.strip():
                return f"{name} takes one answer: pick an option or write your own, not both"
            return f"{name} takes one answer: pick one option"
    return None


def answer_value(raw: Any) -> AnswerLike:
    """The page's answer as a value for ``Session.answer``; AnswerError for any other shape."""
    if raw == "allow":
        return True
    if isinstance(raw, dict) and set(raw) == {"allow"}:  # a scope the card offered, an edited command
        how = raw["allow"]
        if not isinstance(how, dict) or not set(how) <= {"scope", "command"}:
            raise AnswerError("an allow names its scope and, edited, its command")
        scope = next((s for s in SCOPES if s == how.get("scope", "once")), None)
        command = how.get("command", "")
        if scope is None or not isinstance(command, str):
            raise AnswerError("an allow's scope is one of the card's, its command text")
        return GateAnswer(allow=True, scope=None if scope == "once" else scope, edited_command=command)
    if isinstance(raw, dict) and set(raw) == {"accept"}:  # content the human typed (never guessed)
        content = raw["accept"]
        if not isinstance(content, str) or not content.strip():
            raise AnswerError("an accept carries the content typed: a JSON object")
        return GateAnswer(allow=True, content=content.strip())
    if raw == "deny":
        return False
    if raw == "decline":
        return "decline"
    if isinstance(raw, dict) and set(raw) == {"deny"}:  # deny, and tell agy why (userDenyInstruction)
        reason = raw["deny"]
        if not isinstance(reason, str):
            raise AnswerError("a denial's reason is text")
        return GateAnswer(allow=False, deny_reason=reason.strip())
    if isinstance(raw, dict) and isinstance(raw.get("questions"), list) and raw["questions"]:
        selections: list[tuple[str, ...]] = []
        write_ins: list[str] = []
        for item in raw["questions"]:
            choices = item.get("choices", []) if isinstance(item, dict) else None
            write_in = item.get("write_in", "") if isinstance(item, dict) else None
            if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
                raise AnswerError("each question's choices are a list of option ids")
            if not isinstance(write_in, str):
                raise AnswerError("a write-in is text")
            selections.append(tuple(choices))
            write_ins.append(write_in)
        return GateAnswer(selections=tuple(selections), write_ins=tuple(write_ins))
    raise AnswerError(
        "an answer is 'allow', 'deny', {'deny': reason}, {'accept': content}, 'decline' or {'questions': [...]}"
    )
