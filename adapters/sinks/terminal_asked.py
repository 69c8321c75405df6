"""What a gate card on the terminal already said, so it is not said again (issue 47: attach repeated
the question card).

* :func:`asked` / :func:`is_asked` -- the tool call that follows a card the human saw (answered, or
  closed unanswered) is one line, ``⚙ ask_question (as asked above)``, never the card again;
* :func:`call_key` -- a call that repeats the call just before it (agy's re-asks of a question that
  timed out, read back from the history by an attach) is one line, ``⚙ ask_question again (the same
  call as above)``;
* :class:`ClosedCards` -- a card agy closed unanswered (its gate timed out, answered in agy's own
  terminal...) is said closed once, not a second time by its prompt; and when agy asks the very same
  thing again (agy re-asks a question whose wait timed out, at a higher stepIndex), the new card says
  once that it replaces the one above (``↻ agy asks again (the card above timed out):``); so does a
  card that asks again what the call just above asked before it ended in error (an attach started
  after the first wait timed out reads that call from the history).
"""

from __future__ import annotations

import json

from agy_harness.ports.events import GateOpened, ToolCall, ToolResult

__all__ = ["ClosedCards", "asked", "call_key", "is_asked"]


def asked(gate: GateOpened) -> tuple[str, str]:
    """What a gate card showed: its tool and its request (the command, or the first question)."""
    p = gate.permission
    request = (p.command_line if p is not None else "") or (
        gate.questions[0].question if gate.questions else ""
    )
    return gate.tool_name, request


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def is_asked(request: tuple[str, str], call: ToolCall) -> bool:
    """The call is the one the gate card showed: the same tool, its request among its arguments
    (another call of the same tool still gets its own card)."""
    name, text = request
    return bool(text) and name == call.name and text in _strings(call.arguments)


def call_key(call: ToolCall) -> str:
    """A call's tool and arguments: the same for agy's retry of the same call (a re-ask in the history
    an attach reads: its card is said once, the retry is one line)."""
    return json.dumps([call.name, call.arguments], sort_keys=True, default=repr)


def card_key(gate: GateOpened) -> str:
    """Everything a card shows of a gate but the step it waits on: equal for a re-ask of the same."""
    shown = gate.model_dump(
        include={
            "kind",
            "interaction",
            "tool_name",
            "permission",
            "questions",
            "request",
            "allow_label",
            "deny_label",
        }
    )
    return repr(shown)


class ClosedCards:
    """The cards on screen whose prompt is open, and the last one whose wait timed out."""

    def __init__(self) -> None:
        self._open: dict[str, GateOpened] = {}
        self._said: set[str] = set()  # closed, and said so: the prompt does not say it again
        self._last_closed = ""  # the card_key of the last card closed unanswered
        self._call: ToolCall | None = None  # the last call shown, while its result is an error

    def call(self, call: ToolCall) -> None:
        self._call = call

    def result(self, result: ToolResult) -> None:
        """A call that ended in error stays the one a re-ask of its request follows."""
        if self._call is not None and not (result.is_error and result.call_id == self._call.call_id):
            self._call = None

    def turn(self) -> None:
        """A new turn: what was asked before is not asked again."""
        self._call, self._last_closed = None, ""

    def shown(self, gate: GateOpened) -> str:
        """``gate``'s card is printed now; why it is a re-ask ("" when it is not): it asks what a
        card whose wait timed out asked, or what the call just above (read back from the history by
        an attach) asked before it ended in error."""
        self._open[gate.gate_id] = gate
        again = ""
        if self._last_closed == card_key(gate):
            again = "the card above timed out"
        elif self._call is not None and is_asked(asked(gate), self._call):
            again = "the call above ended unanswered"
        self._last_closed, self._call = "", None
        return again

    def closed(self, gate_id: str, *, timed_out: bool) -> GateOpened | None:
        """agy closed ``gate_id`` unanswered here (said on screen now): its card, if it is shown here.
        ``timed_out``: agy's wait ended; the same request asked next is its re-ask."""
        gate = self._open.get(gate_id)
        if gate is not None:
            self._said.add(gate_id)
            self._last_closed = card_key(gate) if timed_out else ""
        return gate

    def ended(self, gate_id: str) -> bool:
        """The prompt of ``gate_id`` ended; True when its closing was said already."""
        self._open.pop(gate_id, None)
        if gate_id in self._said:
            self._said.discard(gate_id)
            return True
        return False
