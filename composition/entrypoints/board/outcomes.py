"""Why an answer from the board did not reach agy, in words a person acts on.

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
from agy_harness.ports.events import GATE_SET_ASIDE, GateOpened

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
