"""What an interrupt really did, read from agy's own steps (issue 47: reply text after an interrupt).

The harness decides an interrupt is worth sending from its own view, which lags behind agy: at
``--pace 0`` agy has often finished the reply by the time ``CancelCascadeSteps`` reaches it, and
the rest of the reply's text is still on its way to the reader. So what the user is told is read
from agy's steps of the current turn (those after its last ``USER_INPUT``), once they are settled:

* a step agy settled ``CANCELED`` — agy really stopped something: **stopped**;
* every step settled and none cancelled — the reply was already whole: **finished**;
* a step still generating, running or pending — agy has not ended the turn yet: **open**.

A ``WAITING`` step counts as open too (the interrupt denies a parked gate first; agy settles it).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from .steps import Step, parse_step

Outcome = Literal["stopped", "finished", "open"]


@dataclass(frozen=True)
class TurnEnd:
    outcome: Outcome
    #: the step names of the turn (settled ones): the reader has shown the turn's end once every
    #: one of them is committed by the harness's reconciler
    names: tuple[str, ...] = ()
    #: where in the steps read the turn's USER_INPUT is (0: none read): the next read starts there
    turn_at: int = 0

    def seen_by(self, committed: AbstractSet[str]) -> bool:
        return all(name in committed for name in self.names)


def turn_end(raws: Iterable[object]) -> TurnEnd:
    """Judge the current turn from a read of every step of the conversation."""
    turn: list[Step] = []
    turn_at = 0
    for at, raw in enumerate(raws):
        step = parse_step(raw)
        if step is None:
            continue
        if step.type == "USER_INPUT":
            turn, turn_at = [], at
            continue
        turn.append(step)
    if any(not step.settled for step in turn):
        return TurnEnd("open", turn_at=turn_at)
    names = tuple(step.name for step in turn)
    if any(step.status in ("CANCELED", "CANCELLED") for step in turn):
        return TurnEnd("stopped", names, turn_at)
    return TurnEnd("finished", names, turn_at)
