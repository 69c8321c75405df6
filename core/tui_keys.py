"""The keys that answer agy's own prompt in its terminal. Pure.

agy's TUI answers its prompt from these keys (the reference harness types them; live-verified on agy
1.2.7: omnigent 0.19.1 server/routes/_antigravity_elicitation.py ``to_tui_selection_keys``):

* permission: agy's numbered menu ``1`` "Yes, run command", ``2`` "Yes, and always allow in this
  conversation for commands that start with '<pattern>'", ``3`` the same persisted to settings.json,
  ``4`` "No, cancel" (every captured prompt has this menu: it is offered with a persist pattern), then
  Enter;
* question: the question's selected option ids then Enter; a decline presses Escape.

The harness types them only onto the prompt of exactly that request, while agy waits on it alone
(see ``composition/gate_delivery.py``); an answer the menu cannot express (a write-in, several
questions, a denial with a reason, a denial where agy offers no persist menu) goes over RPC only.
"Allow always" is only ever typed (agy's menu records the rule; the RPC carries only ``allow``), and
only where agy offers it (``persistSuggestionType`` SUGGESTED with a pattern).

Only digits, ``Enter`` and ``Escape`` are produced: nothing agy controls is typed.
"""

from __future__ import annotations

from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .elicitation import permission_allowed, question_responses

PERSIST_SUGGESTED = "PERSIST_SUGGESTION_TYPE_SUGGESTED"
ENTER, ESCAPE = "Enter", "Escape"
_ALLOW, _SESSION, _ALWAYS, _DENY = "1", "2", "3", "4"


def persist_offered(gate: GateOpened) -> bool:
    p = gate.permission
    return (
        gate.kind == "permission"
        and p is not None
        and p.persist_suggestion_type == PERSIST_SUGGESTED
        and bool(p.suggested_persist_pattern)
    )


def persist_keys(gate: GateOpened, answer: GateAnswer) -> list[str] | None:
    """The menu keys of an "allow always" answer; None when the answer asks for no persistence."""
    if answer.persist is None or not permission_allowed(answer):
        return None
    return [_SESSION if answer.persist == "session" else _ALWAYS, ENTER]


def answer_keys(gate: GateOpened, answer: GateAnswer) -> list[str] | None:
    """The keys that answer agy's prompt for ``gate`` with ``answer``; None when its menu cannot
    express it (then the answer goes over RPC only)."""
    if gate.kind == "permission":
        if answer.persist is not None:
            return None  # "allow always" is persist_keys'
        if permission_allowed(answer):
            return [_ALLOW, ENTER]
        if answer.deny_reason or not persist_offered(gate):
            return None  # a reason is text; the 4-entry menu (with "No, cancel" 4) is the only one seen
        return [_DENY, ENTER]
    if gate.kind != "question" or len(gate.questions) != 1:
        return None
    if answer.action != "accept":
        return [ESCAPE]
    [response] = question_responses(gate, answer)
    ids = response.get("selectedOptionIds", [])
    if response.get("writeInResponse") or len(ids) != 1 or not str(ids[0]).isdigit():
        return None  # a write-in, or several options (agy's multi-select is not a typed list): RPC
    return [str(ids[0]), ENTER]
