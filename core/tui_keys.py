"""The keys that answer agy's own prompt in its terminal. Pure.

agy's TUI answers its prompt from these keys (the reference harness types them; live-verified on agy
1.2.7: omnigent 0.19.1 server/routes/_antigravity_elicitation.py ``to_tui_selection_keys``):

* permission: agy's numbered menu ``1`` "Yes, run command", ``2`` "Yes, and always allow in this
  conversation for commands that start with '<pattern>'", ``3`` the same persisted to settings.json,
  ``4`` "No, cancel" (every captured prompt has this menu: it is offered with a persist pattern), then
  Enter;
* question: the question's selected option ids then Enter; a decline presses Escape.

The harness types them only onto the prompt of exactly that request, while agy waits on it alone
(see ``composition/service/gate_delivery.py``); an answer the menu cannot express (a write-in, several
questions, a denial with a reason, a denial where agy offers no persist menu, an allow with a scope
or an edited command, another interaction than ``permission``) goes over RPC only.
"Allow always" is only ever typed (agy's menu records the rule; the RPC carries only ``allow``), and
only where agy offers it (``persistSuggestionType`` SUGGESTED with a pattern).

Only digits, ``Enter`` and ``Escape`` are produced: nothing agy controls is typed.
"""

from __future__ import annotations

from typing import assert_never

from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .answers import Allow, Choose, Deny, Refuse, Response, loose_verdict

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
    match loose_verdict(gate, answer):
        case Allow(persist="session"):
            return [_SESSION, ENTER]
        case Allow(persist="always"):
            return [_ALWAYS, ENTER]
        case Allow() | Deny() | Choose() | Refuse():
            return None
        case other:
            assert_never(other)


def answer_keys(gate: GateOpened, answer: GateAnswer) -> list[str] | None:
    """The keys that answer agy's prompt for ``gate`` with ``answer`` (its verdict: a checked answer
    is not checked again); None when its menu cannot express it (then the answer goes over RPC only)."""
    verdict = loose_verdict(gate, answer)
    if gate.kind == "permission":
        match verdict:
            case Allow(persist=None, scope=None, command=None) if gate.interaction in ("permission", ""):
                return [_ALLOW, ENTER]
            case Deny(reason="") if persist_offered(gate) and gate.interaction in ("permission", ""):
                return [_DENY, ENTER]  # the 4-entry menu (with "No, cancel" 4) is the only one seen
            case Allow() | Deny() | Choose() | Refuse():
                return None  # "allow always" is persist_keys'; a reason is text; a scope or an edit is RPC's
            case other:
                assert_never(other)
    if gate.kind != "question" or len(gate.questions) != 1:
        return None
    match verdict:
        case Refuse():
            return [ESCAPE]
        case Choose(responses=(Response(option_ids=(option_id,), write_in=""),)) if option_id.isdigit():
            return [option_id, ENTER]
        case Choose() | Allow() | Deny():
            return None  # a write-in, or several options (agy's multi-select is not a typed list): RPC
        case other:
            assert_never(other)
