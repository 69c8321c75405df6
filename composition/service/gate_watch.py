"""What the human sees after answering (issue 34): a lasting grant agy did not keep, and a command that
ran differently from the one approved. Used by the gate bridge; the rules are
:mod:`agy_harness.core.approvals`'s.

* After an allow of a command, the step's ``runCommand.commandLine`` once it ran is compared with the
  approved line (agy's, or the human's edit): a difference is a warning notice with both texts.
* After an allow with a lasting scope, a new gate for a request the grant covers means agy did not keep
  it: a warning notice on every surface, and that scope is not offered again (for requests of that
  interaction) in this session -- the gate reaches the sink without it (:meth:`GateWatch.before_gate`,
  the emitter's look at a gate before the sink sees it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from typing import Any

from agy_harness.core.answers import CheckedAnswer
from agy_harness.core.approvals import (
    Grant,
    approved_command,
    covering,
    grant_of,
    not_kept_text,
    ran_differs_text,
)
from agy_harness.core.display import one_line
from agy_harness.core.scopes import without
from agy_harness.ports.events import Event, GateOpened, Notice, ToolResult
from agy_harness.ports.protocols import StepSnapshot

from .emitter import Emitter
from .settled_runs import SettledRuns

log = logging.getLogger("agy_harness.harness")

KEPT = 256  # approvals and grants remembered


def unchecked_text(gate_id: str, why: str) -> str:
    return f"could not check what agy ran for gate {gate_id}: {one_line(why)}"


class GateWatch:
    def __init__(self, *, snapshot: StepSnapshot, emitter: Emitter, runs: SettledRuns | None = None) -> None:
        self.snapshot = snapshot
        #: what a step ran, read once for this check and the decision's outcome record
        self.runs = runs if runs is not None else SettledRuns(snapshot)
        self.emitter = emitter
        self._approved: dict[str, tuple[GateOpened, str]] = {}  # step key -> (gate, approved line)
        self._grants: list[Grant] = []
        self._dropped: dict[str, set[str]] = {}  # interaction -> scopes agy did not keep
        self._tasks: set[asyncio.Task[None]] = set()
        emitter.bus.on_delivered(self.observe)
        emitter.before_gate = self.before_gate

    # -- told by the bridge -----------------------------------------------------------------------

    def answered(self, gate: GateOpened, answer: CheckedAnswer, step_index: int) -> None:
        """agy took ``answer`` for ``gate`` at ``step_index`` (its step, or agy's re-ask of it)."""
        line = approved_command(gate, answer)
        if line is not None:
            self._approved[f"{gate.trajectory_id}/{step_index}"] = (gate, line)
            while len(self._approved) > KEPT:  # every one kept is unchecked (a checked one is popped)
                dropped, _ = self._approved.pop(next(iter(self._approved)))
                self._spawn(
                    self._unchecked(
                        dropped,
                        f"more than {KEPT} approved commands wait for their result; the oldest is no longer followed",
                    )
                )
        grant = grant_of(gate, answer)
        if grant is not None:
            self._grants = [*self._grants[-(KEPT - 1) :], grant]

    def refuse_scope(self, interaction: str, scope: str) -> None:
        """agy refused ``scope`` by RPC: it is not offered again for that interaction this session."""
        self._dropped.setdefault(interaction, set()).add(scope)

    def offered(self, gate: GateOpened) -> tuple[str, ...]:
        return without(gate.scopes, self._dropped.get(gate.interaction, set()))

    # -- before the sink sees a gate --------------------------------------------------------------

    def before_gate(self, gate: GateOpened) -> list[Event]:
        """The gate as the sink gets it (without a scope agy did not keep), and the notice when this
        very request was covered by a grant."""
        out: list[Event] = []
        grant = covering(self._grants, gate) if gate.answerable else None
        if grant is not None:
            self._grants.remove(grant)
            self._dropped.setdefault(grant.interaction, set()).add(grant.scope)
            text = not_kept_text(grant)
            log.warning("gate %s: %s", gate.gate_id, text)
            out.append(
                Notice(
                    id=f"{gate.id}/grant-not-kept",
                    cascade_id=gate.cascade_id,
                    step_key=gate.step_key,
                    level="warning",
                    text=text,
                )
            )
        scopes = self.offered(gate)
        shown = gate if scopes == gate.scopes else gate.model_copy(update={"scopes": scopes})
        return [shown, *out]

    # -- after agy ran it -------------------------------------------------------------------------

    def observe(self, events: Sequence[Event]) -> None:
        for event in events:
            if isinstance(event, ToolResult) and event.step_key in self._approved:
                gate, line = self._approved.pop(event.step_key)
                self._spawn(self._check(gate, line, event.step_key))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _check(self, gate: GateOpened, approved: str, step_key: str) -> None:
        trajectory, _, index = step_key.rpartition("/")
        try:
            ran = await self._ran(gate.cascade_id, trajectory, int(index))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._unchecked(gate, f"agy's steps could not be read ({type(exc).__name__}: {exc})")
            return
        if ran is not None and ran != approved:
            text = ran_differs_text(approved, ran)
            log.warning("gate %s: %s", gate.gate_id, text)
            await self.emitter.notice(f"{gate.id}/ran", text, "warning")

    async def _unchecked(self, gate: GateOpened, why: str) -> None:
        """The check of what ran did not happen: said on every surface, as a warning (a choice shown
        is honoured -- the human is never left believing it was checked)."""
        text = unchecked_text(gate.gate_id, why)
        log.warning("gate %s: %s", gate.gate_id, text)
        await self.emitter.notice(f"{gate.id}/ran-unchecked", text, "warning")

    async def _ran(self, cascade_id: str, trajectory: str, index: int) -> str | None:
        """What the step ran (:class:`.settled_runs.SettledRuns`: read from that step on where the
        snapshot can, the one read shared with the outcome record)."""
        return await self.runs.ran(cascade_id, trajectory, index)

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        """The checks in flight (the harness cancels them when it stops)."""
        return list(self._tasks)
