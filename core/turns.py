"""What every consumer of the events works out the same way, once: turn boundaries, the tokens a turn
spent, and which part of a committed reply its text stream has not shown. Pure (sans-IO): feed events,
read the answers; the terminal, the omnigent sink and plugin, ACP and the board use it.

* :class:`UsageTotals` -- agy reports *cumulative* totals (``Usage``, SET semantics: the latest wins)
  whose ``input`` excludes cache reads; :attr:`UsageTotals.prompt` is input with cache reads (what
  omnigent counts as ``input_tokens``), ``last_prompt`` the last model call's prompt (the growth of
  input plus cache reads one report shows).
* :func:`spent` -- what was spent between two snapshots of the totals (never negative):
  :class:`TurnUsage`.
* :class:`Turns` -- turn boundaries from status edges: ``running`` opens a turn
  (:class:`TurnStarted`, with the totals at its start), ``idle``/``failed`` closes it
  (:class:`TurnEnded`, with what it spent when it was seen starting).
* :class:`RunStatus` -- agy's own word on the run, from the stream's updates: over when ``status`` is
  IDLE *and* ``fullyIdle`` (``AgentStateUpdate.fully_idle=18``) where this agy sends it; where it
  does not, the stream's IDLE alone closes nothing (the current rule: the turn closes on its final
  reply, or the run-status backstop).
* :class:`Replies` -- streamed vs committed text: a message's deltas (a replayed ``index`` is skipped)
  are retired by its committed ``AssistantMessage``; :meth:`Replies.commit` says what the stream has
  not shown (:class:`Commit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, assert_never

from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    ReasoningDelta,
    Rotation,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

from .mapper_state import MapperState
from .steps import parse_step, turn_of_user_key

# -- usage -------------------------------------------------------------------------------------------


@dataclass
class UsageTotals:
    """The conversation's cumulative totals as last reported, and the last model call's prompt."""

    input: int = 0  # agy's inputTokens: without cache reads
    output: int = 0
    cache_read: int = 0
    model: str = ""
    last_prompt: int = 0

    @property
    def prompt(self) -> int:
        """Input tokens with cache reads (omnigent's ``input_tokens``)."""
        return self.input + self.cache_read

    def update(self, event: Usage) -> None:
        step_prompt = (event.cumulative_input_tokens - self.input) + (
            event.cumulative_cache_read_input_tokens - self.cache_read
        )
        if step_prompt > 0:
            self.last_prompt = step_prompt
        self.input = event.cumulative_input_tokens
        self.output = event.cumulative_output_tokens
        self.cache_read = event.cumulative_cache_read_input_tokens
        if event.model:
            self.model = event.model

    def copy(self) -> UsageTotals:
        return replace(self)

    @classmethod
    def of(cls, event: Usage) -> UsageTotals:
        """The totals one report states."""
        totals = cls()
        totals.update(event)
        return totals


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """Tokens spent between two snapshots of the totals."""

    input: int  # without cache reads
    output: int
    cache_read: int
    last_prompt: int = 0  # the last model call's prompt at the end (0: unknown)
    model: str = ""

    @property
    def prompt(self) -> int:
        """Input with cache reads (omnigent's ``input_tokens``)."""
        return self.input + self.cache_read

    @property
    def any(self) -> bool:
        return bool(self.prompt or self.output)


def spent(before: UsageTotals, after: UsageTotals) -> TurnUsage:
    """What was spent from ``before`` to ``after`` (each count at least 0: a total never shrinks)."""
    return TurnUsage(
        input=max(0, after.input - before.input),
        output=max(0, after.output - before.output),
        cache_read=max(0, after.cache_read - before.cache_read),
        last_prompt=after.last_prompt,
        model=after.model,
    )


# -- agy's word on the run ---------------------------------------------------------------------------

RUN_RUNNING = "CASCADE_RUN_STATUS_RUNNING"
RUN_IDLE = "CASCADE_RUN_STATUS_IDLE"


@dataclass
class RunStatus:
    """Reads each stream update's ``status`` and ``fullyIdle``: :meth:`read` says whether agy reports
    the run over. proto-JSON omits a false ``fullyIdle``, so "this agy sends it" is learned: once an
    update carried the field, its absence means "not fully idle" (the evidence-backed terminal
    predicate, sdougbrown/avenor ``FIELD_MAP.md``: ``status==IDLE && fully_idle==true``)."""

    sends_fully_idle: bool = False
    #: agy still works (RUNNING, or IDLE but not fully idle where it says so): the stream's watchdog
    running: bool = False

    def read(self, update: dict[str, object]) -> bool | None:
        """True: the run is over; False: it is not; None: this update does not say (no status, or
        an IDLE from an agy that does not send ``fullyIdle``: the current rule decides)."""
        if "fullyIdle" in update:
            self.sends_fully_idle = True
        status = update.get("status")
        if not isinstance(status, str) or not status:
            return None
        if status != RUN_IDLE:
            self.running = status == RUN_RUNNING
            return False
        if not self.sends_fully_idle:
            self.running = False
            return None
        fully = update.get("fullyIdle") is True
        self.running = not fully
        return fully


#: a step status that means agy is not done with it (proto-JSON enum suffixes; PENDING: a tool step
#: agy created and has not run or asked about yet, as the recorded run_command's transitions show)
UNSETTLED = ("WAITING", "RUNNING", "GENERATING", "PENDING")


def turn_goes_on(state: MapperState, raws: Sequence[Any]) -> str:
    """Why a turn may not close although agy says idle ('' when nothing says so): a step in ``raws``
    (agy's steps, freshly read, in order) is unsettled (WAITING, RUNNING, GENERATING, PENDING), or a
    gate is open in the reconciler's ``state``. The one rule for every idle signal: agy's stream
    (``IDLE`` and ``fullyIdle``, which may be stale) and the run-status backstop.

    One exception (issue #35 case 8): a step BEFORE the open turn's user input whose
    ``metadata.executionId`` names another turn is not the open turn's, and holds it open no longer
    (nor does the gate open on it): a flood of gates no turn waits on, sitting in the step list when the
    human started the turn, kept an interrupted turn open for good. Where the open turn's user input
    is not among ``raws``, or a step has no executionId, nothing is set apart."""
    current = turn_of_user_key(state.turn)
    started = False  # the open turn's user input was passed
    foreign: list[str] = []  # why each unsettled step of another, earlier turn would hold it
    foreign_keys: set[str] = set()  # those steps' keys: a gate open on one of them does not hold it
    for raw in raws:
        if not isinstance(raw, dict):
            continue
        metadata = raw.get("metadata")
        execution = metadata.get("executionId") if isinstance(metadata, dict) else None
        kind = raw.get("type")
        if current and execution == current and isinstance(kind, str) and kind.endswith("USER_INPUT"):
            started = True
        status = raw.get("status")
        if not (isinstance(status, str) and status.endswith(UNSETTLED)):
            continue
        why = f"a step is {status.rsplit('_', 1)[-1]}"
        if current and not started and isinstance(execution, str) and execution and execution != current:
            foreign.append(why)
            step = parse_step(raw)
            if step is not None:
                foreign_keys.add(str(step.key))
            continue
        return why
    if not started and foreign:
        return foreign[0]  # the open turn's user input was not read: nothing is set apart
    if any(key not in foreign_keys for key in state.gates):  # a gate on any other step holds it
        return "a gate is open"
    return ""


# -- turns -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnStarted:
    cascade_id: str
    at: UsageTotals  # the totals when it started (a copy)


@dataclass(frozen=True, slots=True)
class TurnEnded:
    cascade_id: str
    status: Literal["idle", "failed"]
    reason: str
    spent: TurnUsage | None  # None: the turn was not seen starting (a replayed idle, a first status)
    reported: bool  # a usage report arrived during the turn


Boundary = TurnStarted | TurnEnded


@dataclass
class Turns:
    """Turn boundaries and per-turn usage of a conversation's events (see the module doc).

    ``cascade_id`` narrows it to one conversation's events; None follows every event it is fed.
    """

    cascade_id: str | None = None
    usage: UsageTotals = field(default_factory=UsageTotals)
    running: bool = False
    reported: bool = False  # a usage report arrived during the current turn
    _at: UsageTotals | None = field(default=None, init=False, repr=False)  # the totals at the turn's start

    def spent(self) -> TurnUsage | None:
        """What the current (or last) turn spent so far; None when no turn was seen starting."""
        return spent(self._at, self.usage) if self._at is not None else None

    def feed(self, event: Event) -> Boundary | None:
        if self.cascade_id is not None and event.cascade_id != self.cascade_id:
            return None
        match event:
            case Usage():
                self.usage.update(event)
                self.reported = self.reported or self.running
            case ModelChanged(model=model):
                self.usage.model = model
            case StatusChanged(status="running"):
                if not self.running:
                    self.running, self.reported, self._at = True, False, self.usage.copy()
                    return TurnStarted(event.cascade_id, self._at.copy())
            case StatusChanged(status="idle" | "failed" as status):
                was, self.running = self.running, False
                return TurnEnded(
                    event.cascade_id, status, event.reason, self.spent() if was else None, self.reported
                )
            case (
                StatusChanged()
                | UserMessage()
                | AssistantMessage()
                | ToolCall()
                | ToolResult()
                | TextDelta()
                | ReasoningDelta()
                | GateOpened()
                | GateWithdrawn()
                | Rotation()
                | SubagentStarted()
                | Notice()
            ):
                pass
            case other:
                assert_never(other)
        return None


# -- streamed vs committed text ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Commit:
    """A committed message against what its stream showed."""

    text: str
    shown: str | None  # what its deltas showed; None: nothing streamed

    @property
    def diverged(self) -> bool:
        """The stream showed text the committed message does not start with (rewritten meanwhile)."""
        return self.shown is not None and not self.text.startswith(self.shown)

    @property
    def rest(self) -> str:
        """What the stream has not shown: the whole text when nothing streamed, the missing tail after a
        cut stream, nothing after a complete one -- or after a diverged one (see :attr:`diverged`)."""
        if self.shown is None:
            return self.text
        return "" if self.diverged else self.text[len(self.shown) :]


class Replies:
    """Each message's streamed text until its committed message retires it (see the module doc).

    ``keep_text`` False tracks only which deltas were seen (a thought's stream, never committed).
    """

    def __init__(self, *, keep_text: bool = True) -> None:
        self.keep_text = keep_text
        self._chunks: dict[str, list[str]] = {}  # message id -> its deltas shown, in order
        self._last: dict[str, int] = {}  # message id -> the last delta index seen
        self._committed: set[str] = set()

    def delta(self, message_id: str, index: int, delta: str) -> str | None:
        """The delta to show, or None for a replay (its ``index`` was already seen for the message)."""
        last = self._last.get(message_id)
        if last is not None and index <= last:
            return None
        self._last[message_id] = index
        if delta and self.keep_text:
            self._chunks.setdefault(message_id, []).append(delta)  # (joined once, at the commit)
        return delta

    def streaming(self, message_id: str) -> bool:
        """Deltas of the message were shown and it is not committed yet."""
        return message_id in self._chunks

    def committed(self, message_id: str) -> bool:
        return message_id in self._committed

    def shown(self, message_id: str) -> str:
        """What the stream has shown of an uncommitted message so far."""
        return "".join(self._chunks.get(message_id, ()))

    def commit(self, message_id: str, text: str) -> Commit:
        """The message is committed: its stream is retired (see :class:`Commit`)."""
        chunks = self._chunks.pop(message_id, None)
        self._committed.add(message_id)
        return Commit(text, "".join(chunks) if chunks is not None else None)
