"""agy's gates as omnigent elicitations, and omnigent's replies as checked answers (fail closed).

The shapes are the omnigent sink's (:mod:`agy_harness.adapters.sinks.omnigent.gates`), so the web UI
renders the same cards whether omnigent drives agy through this plugin or follows it through the
sink, and a reply is read one way: a permission is omnigent's approve/reject card with the command
and its directory; a question is omnigent's question form (``ask_user_question``: radios, checkboxes
for a multi-select, free text that reaches agy as the write-in), answered ``{"0": "<label>"}`` or
``{"0": ["<label>", "<text>"]}``. Every reply goes through the core's fail-closed
:func:`~agy_harness.core.answers.parse_answer`; what it cannot read raises
:class:`~agy_harness.core.answers.AnswerError`, nothing reaches agy, and the plugin asks again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from agy_harness.adapters.sinks.omnigent.cards import markup_neutral
from agy_harness.adapters.sinks.omnigent.gates import answer_from_result, gate_params, terminal_only_fields
from agy_harness.adapters.sinks.omnigent.gates import elicitation_id as _elicitation_id
from agy_harness.ports.events import Event, GateOpened, GateWithdrawn
from agy_harness.ports.protocols import GateAnswer
from agy_harness.ports.tasks import reap

from .sink import CardAsker


def elicitation_id(gate: GateOpened, attempt: int = 0) -> str:
    """Deterministic, without ``/`` (omnigent's resolve route puts it in a URL path); a re-ask after an
    unreadable reply gets its own id."""
    base = _elicitation_id(gate.gate_id)
    return f"{base}_{attempt}" if attempt else base


def elicitation_params(gate: GateOpened, note: str = "", attempt: int = 0) -> dict[str, Any]:
    """omnigent's ``ElicitationRequestParams`` fields for ``gate`` (``note`` goes before the message).

    A re-ask after an unreadable reply (``attempt`` > 0) has a policy name of its own: omnigent's chat
    would approve it by itself, unseen, where "always" was answered (a card only agy's terminal can
    answer would come back forever), and the human would not see why it is asked again."""
    params = gate_params(gate)
    if note and params.get("phase") == "agy_terminal_only":  # the note names agy's terminal: once
        params.update(terminal_only_fields(gate, note))
    elif note:  # the message is one field for omnigent's web UI (plain) and its chat (rich markup)
        shown = note if markup_neutral(note) else "Your answer could not be read; nothing was sent to agy."
        params["message"] = f"{shown}\n\n{params['message']}"
    if attempt:
        params["policy_name"] = f"{params['policy_name']}.retry{attempt}"
    return params


def answer_from_reply(gate: GateOpened, action: str, content: Mapping[str, Any] | None) -> GateAnswer:
    """omnigent's elicitation reply as a checked :class:`GateAnswer`; raises ``AnswerError``."""
    return answer_from_result(gate, {"action": action, "content": None if content is None else dict(content)})


#: why a card only agy's terminal answers is shown again after omnigent's Stop, or the interrupt its
#: runner sends before a Reject (``runner/app.py``): agy's cancel does not free a gate that waits
HELD_NOTE = (
    "Nothing was sent to agy and its turn goes on: omnigent's Reject and Stop cannot end it while agy "
    "waits for this in agy's terminal; answer it there."
)


class TerminalOnlyCards:
    """Gates only agy's terminal can answer (the harness never asks them): a card that says so for as
    long as agy waits, retired when agy moves on or the turn ends, shown again (:meth:`again`) when
    omnigent would end the turn while agy still waits."""

    def __init__(self) -> None:
        self._cards: dict[str, tuple[GateOpened, asyncio.Task[GateAnswer | None]]] = {}
        self._asker: CardAsker | None = None

    def follow(self, event: Event, asker: CardAsker) -> None:
        if isinstance(event, GateOpened) and not event.answerable and event.gate_id not in self._cards:
            self._asker = asker
            self._start(event, "")
        elif isinstance(event, GateWithdrawn) and event.gate_id in self._cards:
            self._cards.pop(event.gate_id)[1].cancel()

    def _start(self, gate: GateOpened, note: str) -> None:
        asker = self._asker
        assert asker is not None

        async def card() -> GateAnswer | None:
            return await asker(gate, note=note)

        self._cards[gate.gate_id] = (gate, asyncio.create_task(card(), name=f"agy-card-{gate.gate_id}"))

    def waiting(self) -> bool:
        """Whether agy waits on a gate of this turn that only its terminal can answer."""
        return any(not task.done() for _, task in self._cards.values())

    def again(self, note: str = HELD_NOTE) -> None:
        """Each card is shown again, saying why (``note``): its old card leaves every surface."""
        for gate, task in list(self._cards.values()):
            if not task.done():
                task.cancel()
                self._start(gate, note)

    async def retire_all(self) -> None:
        cards, self._cards = [task for _, task in self._cards.values()], {}
        for card in cards:
            card.cancel()
        await reap(*cards)
