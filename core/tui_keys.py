"""The keys that answer agy's own prompt in its terminal. Pure.

After an RPC answer agy's TUI may keep its prompt open, and the next typed turn would land in it; the
reference harness types the choice into the pane (live-verified on agy 1.2.7: omnigent 0.19.1
server/routes/_antigravity_elicitation.py ``to_tui_selection_keys``):

* permission: agy's numbered menu ``1`` "Yes, run command", ``2`` "Yes, and always allow in this
  conversation for commands that start with '<pattern>'", ``3`` the same persisted to settings.json,
  ``4`` "No, cancel" (the reference types ``4`` for a denial with every captured prompt), then Enter;
* question: the first question's selected option ids then Enter; a decline (or no option chosen)
  presses Escape.

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


def dismiss_keys(gate: GateOpened, answer: GateAnswer) -> list[str]:
    """The keys that close agy's prompt once the answer went over RPC (possibly none)."""
    if gate.kind == "permission":
        return [_ALLOW if permission_allowed(answer) else _DENY, ENTER]
    if gate.kind == "question":
        responses = question_responses(gate, answer) if answer.action == "accept" else []
        first = responses[0].get("selectedOptionIds", []) if responses else []
        ids = [i for i in first if isinstance(i, str) and i.isdigit()]
        return [*ids, ENTER] if ids else [ESCAPE]
    return []
