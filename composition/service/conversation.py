"""What the harness's roles share: the bound conversation, the options and the counters.

The bound conversation (:class:`Conversation`) is the cascade id and its reconciler; both move
together on rotation (agy's ``/clear``). Every role reads them from here, never from a copy, so a
rotation is seen by all of them at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from agy_harness.core.reconciler import MapperState, Reconciler
from agy_harness.core.rotation import rotated_state
from agy_harness.ports.protocols import CursorQuarantine, CursorStore

log = logging.getLogger("agy_harness.harness")


@dataclass
class HarnessOptions:
    fallback_backoff: float = 0.5  # first stay on the fallback source before retrying the preferred one
    max_backoff: float = 10.0
    sink_retry: float = 0.2  # first pause before re-delivering what the sink did not accept
    directory_interval: float = 1.0  # rotation + run-status backstop check; 0 disables
    directory_idle_factor: int = 3  # quiet: the check backs off up to this many intervals
    idle_reports_to_close: int = 2
    #: How long an answer is retried (with backoff, re-reading agy each time) while its step still
    #: WAITs and agy fails transiently (5xx, unreachable, timeouts, failed re-reads); a notice says so
    #: when it runs out. A proven shape error or a step that left WAITING ends it at once.
    answer_deadline: float = 600.0
    #: Follow agy's ``/clear`` to the new conversation, on positive evidence only (docs/conventions.md's
    #: rotation rule). False: the session stays on the conversation it bound, whatever happens.
    follow_clear: bool = True
    subagent_poll: float = 0.25  # a sub-agent's cascade is polled at this interval
    subagent_link_wait: float = 5.0  # how long a new sub-agent waits for the result naming it


@dataclass
class HarnessStats:
    source_errors: int = 0
    driver_restarts: int = 0
    demotions: list[str] = field(default_factory=list)
    batches: dict[str, int] = field(default_factory=dict)
    events: int = 0
    current_source: str = ""
    quarantined: list[str] = field(default_factory=list)  # ids of events a sink refused for content


class Conversation:
    """The bound cascade and its reconciler (resumed from the cursor store when one has it)."""

    def __init__(self, cascade_id: str, cursor_store: CursorStore | None = None) -> None:
        self.cursor_store = cursor_store
        self.cascade_id = cascade_id
        #: what a damaged cursor means for the consumer, until the harness tells it in a notice
        self.damage_notices: list[str] = []
        self.reconciler = self._reconciler_for(cascade_id, None)

    def _reconciler_for(self, cascade_id: str, carry: MapperState | None) -> Reconciler:
        state: MapperState | None = None
        store = self.cursor_store
        if store is not None:
            cursor = store.load(cascade_id)
            damaged = store.damaged(cascade_id) if isinstance(store, CursorQuarantine) else None
            if cursor is not None:
                try:
                    state = MapperState.model_validate(cursor.state)
                except ValueError as exc:
                    why = f"its state does not fit ({type(exc).__name__})"
                    log.warning(
                        "cursor for %s is unreadable (%s); starting from the beginning", cascade_id, why
                    )
                    if isinstance(store, CursorQuarantine):
                        damaged = f"{why}; moved aside to {store.quarantine(cascade_id, why)}"
                    else:
                        damaged = why
            if damaged:
                self.damage_notices.append(
                    f"the saved cursor of conversation {cascade_id} could not be used ({damaged}). "
                    "This session reads the conversation from agy's history again: events delivered "
                    "before the restart are delivered again, under the same ids."
                )
        if state is None and carry is not None:
            state = rotated_state(carry)
        return Reconciler(cascade_id, state)

    def producing(self) -> bool:
        """Whether agy should be producing steps now: a turn runs and no gate waits. (While a gate waits
        on the human, for hours maybe, or the conversation is idle, a silent stream is agy being quiet,
        not a dead stream: the stream's idle watchdog asks this.)"""
        state = self.reconciler.state
        return state.status == "running" and not state.gates

    def rebind(self, new_cascade: str) -> None:
        """Follow a rotation: the new cascade, its cursor or the old turn's carried state."""
        carry = self.reconciler.state
        self.cascade_id = new_cascade
        self.reconciler = self._reconciler_for(new_cascade, carry)
