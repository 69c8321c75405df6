"""The cards of gates only agy's terminal can answer end as agy's outcome was, never ``pending``.

Such a card (:data:`.mapping.TERMINAL_ONLY`) is the ``tool_call`` of the gate's step. When agy goes
on with the step, the step's own tool result ends it (``completed`` / ``failed``: :mod:`.mapping`).
A step that has no tool result of its own (a GENERIC step, a request agy refused in its terminal:
it never runs) would leave the card ``pending`` forever: once agy stopped waiting on it and the turn
ended, :meth:`TerminalCards.end` ends it -- ``completed`` when agy went on with it (its tool call was
seen), else ``failed``, saying why (not run after the answer, timed out, ...). Replayed history ends
its cards the same way (the conversation so far is past). The card says "answer it there" once: the
harness's notice for the same step, which says it too, is not said again beside it
(:meth:`TerminalCards.said_on_card`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from acp import helpers as h

from agy_harness.ports.events import Event, GateOpened, GateWithdrawn, Notice, ToolCall, ToolResult

from .mapping import Update, text_content

POINTER_WORDS = "agy's terminal"
CARDS_KEPT = 256  # cards agy still waits on, remembered (the oldest is forgotten beyond)


def _not_run(why: str) -> str:
    """What the card says when agy did not go on with its step."""
    if why == "answered":
        return "agy did not go on with it (no run of it followed the answer)."
    if why == "timed out":
        return "agy stopped waiting for it (timed out); it did not run."
    return f"agy stopped waiting for it ({why}); it did not run."


@dataclass
class TerminalCards:
    #: step key -> None while agy waits on its gate, else why agy stopped waiting (the withdrawal's reason)
    cards: dict[str, str | None] = field(default_factory=dict)
    ran: set[str] = field(default_factory=set)  # cards whose step agy went on with (its tool call seen)

    def observe(self, event: Event) -> None:
        match event:
            case GateOpened() if not event.answerable and event.step_key:
                self.cards.setdefault(event.step_key, None)
                while len(self.cards) > CARDS_KEPT:
                    gone = next(iter(self.cards))
                    del self.cards[gone]
                    self.ran.discard(gone)
            case GateWithdrawn() if event.step_key in self.cards:
                self.cards[event.step_key] = event.reason or "gone"
            case ToolCall() if event.call_id in self.cards:
                self.ran.add(event.call_id)
            case ToolResult() if event.call_id in self.cards:  # its own result ends it (mapping.py)
                del self.cards[event.call_id]
                self.ran.discard(event.call_id)
            case _:
                pass

    def said_on_card(self, event: Event) -> bool:
        """``event`` is a notice that sends the human to agy's terminal about a step whose card says
        so already: the card says it once (issue 45), the notice is not said again beside it."""
        return isinstance(event, Notice) and event.step_key in self.cards and POINTER_WORDS in event.text

    def end(self, decided: dict[str, str]) -> list[Update]:
        """The turn ended: each card agy stopped waiting on that no result ended, ended now.
        ``decided``: who decided each gate (the mapper's; the update replaces the card's content, so
        it is said again)."""
        out: list[Update] = []
        for key, why in list(self.cards.items()):
            if why is None:
                continue  # agy still waits on it: its card stays pending
            del self.cards[key]
            ran = key in self.ran
            self.ran.discard(key)
            text = "agy went on with it." if ran else _not_run(why)
            content = [*text_content(text), *text_content(decided.pop(key, ""))]
            out.append(h.update_tool_call(key, status="completed" if ran else "failed", content=content))
        return out
