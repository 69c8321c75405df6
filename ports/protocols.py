"""The ports: small typed protocols that adapters fill and composition wires.

Steps travel as the raw JSON objects agy produces (``dict[str, Any]``); the core's tolerant step model
reads them. Adapters never interpret steps beyond what their transport needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

# (the errors the ports raise live in the vocabulary, :mod:`.errors`; these names stay importable here)
from .errors import EventRefused as EventRefused
from .errors import InteractionRejected as InteractionRejected
from .errors import MethodMissing
from .events import Event, GateOpened

#: A step source or turn sender that cannot serve this agy raises the vocabulary's MethodMissing;
#: this is its older name.
SourceUnavailable = MethodMissing

RawStep = Any  # a JSON value that should be a step object; the core skips what is not


class StepBatch(BaseModel):
    """What a step source yields: steps in arrival order.

    ``snapshot`` is True when ``steps`` is the whole trajectory (a poll, the stream's first frame, a
    full transcript read) rather than an incremental update.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    cascade_id: str
    steps: tuple[RawStep, ...]
    snapshot: bool = False
    source: str = ""
    #: agy's own word on the run, where the batch carries one (the stream): True when agy reports
    #: it over (``status`` IDLE and ``fullyIdle`` where this agy sends it); None: it does not say
    run_idle: bool | None = None
    #: steps ``[start, end)`` of the conversation this source could not read (its answer over the
    #: size limit even with every string cut: thousands of finished steps); ``steps`` follow them.
    #: Said once, as a notice; never read as if they were there
    unread: tuple[int, int] | None = None


@runtime_checkable
class StepSource(Protocol):
    """Reads a cascade's steps. ``live`` sources show GENERATING snapshots (text deltas)."""

    name: str
    live: bool

    def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        """Yield batches until the source ends (raise MethodMissing, SourceIdle, or another error)."""
        ...


@runtime_checkable
class StepSnapshot(Protocol):
    """A one-shot read of every step of a cascade (``GetCascadeTrajectorySteps``)."""

    async def read_steps(self, cascade_id: str) -> list[RawStep]: ...


@runtime_checkable
class StepSnapshotFrom(Protocol):
    """A snapshot that can read a cascade's steps from an index on (``stepOffset``): what one step
    needs, without decoding a whole large conversation."""

    async def read_steps_from(self, cascade_id: str, offset: int) -> list[RawStep]: ...


@runtime_checkable
class InteractionDelivery(Protocol):
    async def deliver(self, cascade_id: str, interaction: dict[str, Any]) -> None:
        """``HandleCascadeUserInteraction``; raises InteractionRejected when agy refuses the answer,
        AgyUnreachable when agy did not answer."""
        ...


@runtime_checkable
class TurnSender(Protocol):
    name: str

    async def send(self, cascade_id: str, text: str) -> None:
        """Start a user turn with ``text``; returns once agy accepted it."""
        ...


@runtime_checkable
class Interrupter(Protocol):
    async def interrupt(self, cascade_id: str) -> None: ...


class CascadeSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    cascade_id: str
    parent_id: str = ""
    root_id: str = ""
    status: str = ""
    step_count: int = 0
    #: ``trajectoryType`` (e.g. ``CORTEX_TRAJECTORY_TYPE_CASCADE``); empty when agy omits it
    trajectory_type: str = ""
    last_user_input_time: str = ""
    last_modified_time: str = ""
    #: agy's title for the conversation (``summary``); empty when agy has none yet
    title: str = ""
    #: the conversation's workspace folders (``workspaces[].workspaceFolderAbsoluteUri``)
    workspace_uris: tuple[str, ...] = ()


@runtime_checkable
class CascadeDirectory(Protocol):
    async def list_cascades(self) -> list[CascadeSummary]: ...


@runtime_checkable
class CascadeStarter(Protocol):
    """Starts a new conversation on agy (``StartCascade``); returns its id."""

    async def start(self) -> str: ...


class ModelInfo(BaseModel):
    """One ``GetAvailableModels`` entry. ``label`` is agy's ``displayName``; ``default`` marks the
    catalog's ``defaultAgentModelId``; ``supports_thinking``/``thinking_budget`` are None when absent."""

    model_config = ConfigDict(frozen=True)

    model: str
    label: str = ""
    recommended: bool = False
    default: bool = False
    supports_thinking: bool | None = None
    thinking_budget: int | None = None


@runtime_checkable
class ModelCatalog(Protocol):
    async def models(self) -> list[ModelInfo]: ...


class GateAnswer(BaseModel):
    """A human's answer to a gate.

    ``action`` accept carries ``selections`` (one list of option ids or labels per question, labels
    that match no option become the write-in) or ``allow`` for a permission; decline/cancel refuse.
    """

    model_config = ConfigDict(frozen=True)

    action: Literal["accept", "decline", "cancel"] = "accept"
    selections: tuple[tuple[str, ...], ...] = ()
    write_ins: tuple[str, ...] = ()
    allow: bool | None = None
    #: the version gate's FALLBACK route for a lasting grant (``scope`` is the route): "allow always"
    #: typed into agy's menu, for a permission agy offers it on (``persist_suggestion_type`` SUGGESTED):
    #: ``session`` (this conversation) or ``always`` (agy's settings.json), for agy's own pattern
    #: (``suggested_persist_pattern``). Only agy's own menu records the rule, so this needs agy's
    #: pane; without it the answer is refused, nothing sent. Where agy offers no pattern it is once.
    persist: Literal["session", "always"] | None = None
    #: with a denial: what to tell agy instead (``permission.userDenyInstruction``)
    deny_reason: str = ""
    #: with an allow: how long agy keeps the grant -- agy's PermissionScope, sent over RPC as
    #: ``permission.scope`` (``PERMISSION_SCOPE_CONVERSATION``...). Only a scope the gate lists in its
    #: ``scopes``, else the answer is refused (nothing sent). ``None``: once.
    scope: Literal["once", "conversation", "workspace", "project", "global"] | None = None
    #: with an allow, on a gate whose ``editable`` is True: the command line the human edited; it is
    #: what runs (``runCommand.submittedCommandLine``). On a gate that is not editable: refused.
    edited_command: str = ""
    #: with an accept of an MCP elicitation: the content the human gave, a JSON object as text
    #: (``elicitation.contentJson``); never guessed. Anywhere else: refused.
    content: str = ""
    #: with an allow of a command: run it outside agy's sandbox (``runCommand.sandboxOverride``); only
    #: when the human chose it. Anywhere else: refused.
    sandbox_override: bool = False


@runtime_checkable
class TuiKeys(Protocol):
    """agy's own terminal (its tmux pane): what its prompt shows, and keys typed into it (option
    digits, ``Enter``, ``Escape``)."""

    async def shows_prompt(self, gate: GateOpened) -> bool:
        """The pane shows the prompt of exactly this request, as its last prompt, with nothing typed."""
        ...

    async def send_keys(self, keys: Sequence[str]) -> None: ...


@runtime_checkable
class TuiScreen(Protocol):
    """What agy's own terminal (its tmux pane) shows, one string per row."""

    async def screen(self) -> list[str]: ...


@runtime_checkable
class EventSink(Protocol):
    """Where events go. A sink whose ``deliver`` never waits (it puts events on an unbounded queue or
    a list, nothing else) may say so with a class attribute ``delivers_at_once = True``: the harness
    then delivers to it from the reader's own task, without a task per batch. Such a ``deliver``
    must not await anything that waits (a timeout, I/O, a lock)."""

    async def deliver(self, events: Sequence[Event]) -> int:
        """Deliver events in order; return how many (a prefix) the consumer accepted."""
        ...

    async def ask(self, gate: GateOpened) -> GateAnswer:
        """Ask the human; may take hours. Cancelled when the gate is withdrawn."""
        ...

    async def withdraw(self, gate_id: str) -> None:
        """The gate is gone; stop asking."""
        ...


@runtime_checkable
class Clock(Protocol):
    """Time as a component sees it: the event loop's in a session, a virtual one in unit tests."""

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


@runtime_checkable
class SessionClock(Clock, Protocol):
    """The clock of a session's roles: a Clock that also waits for something to happen, up to a time
    (every wait and backoff of the harness goes through it, so a unit test never really sleeps)."""

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """Until ``event`` is set (True) or ``timeout`` seconds have passed (False)."""
        ...


@runtime_checkable
class Claims(Protocol):
    """Which conversations the sessions of this library are, or were, bound to: a conversation another
    session worked on is never this session's ``/clear`` (the rotation rule)."""

    def claim(self, cascade_id: str) -> None:
        """Record that this session is bound to ``cascade_id``. Never raises."""
        ...

    def others(self) -> set[str]:
        """The conversations other sessions claimed; raises UnsafeState when they cannot be read safely."""
        ...


@runtime_checkable
class ShowsModelNames(Protocol):
    """A sink that shows agy's model display names: the session hands it agy's catalog when it is
    built (the sink is made by the entry point, before agy is bound)."""

    def bind_model_catalog(self, catalog: ModelCatalog) -> None: ...


class Cursor(BaseModel):
    """What the harness has delivered for one cascade, so a restart neither loses nor repeats."""

    cascade_id: str
    committed: list[str] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class CursorStore(Protocol):
    def load(self, cascade_id: str) -> Cursor | None: ...

    def save(self, cursor: Cursor) -> None: ...


@runtime_checkable
class CursorJournal(CursorStore, Protocol):
    """A CursorStore that takes each change instead of the whole cursor: its cost per delivery does
    not grow with the conversation.

    ``record`` gets the step keys committed since the last record and the whole mapper state less
    ``committed``; it returns True when ``sync`` is due. The harness calls ``sync`` (off the loop)
    before it takes the next batch from agy: a committed event is durable by then.
    """

    def record(self, cascade_id: str, committed: Sequence[str], state: dict[str, Any]) -> bool: ...

    def sync(self, cascade_id: str) -> None: ...


@runtime_checkable
class CursorQuarantine(Protocol):
    """A CursorStore that sets damaged cursors aside (never deletes them) and says so.

    ``damaged`` tells, once, why the last ``load`` of ``cascade_id`` found no usable cursor (it was
    moved aside), or None. ``quarantine`` moves aside a cursor that loaded but cannot be used (its
    state does not fit the mapper) and returns where it went.
    """

    def damaged(self, cascade_id: str) -> str | None: ...

    def quarantine(self, cascade_id: str, reason: str) -> str: ...


# -- the decision ledger (issue 36) ----------------------------------------------------------------

DeciderKind = Literal["human", "rule", "auto", "agy-terminal", "timeout", "interrupt"]


class DecidedBy(BaseModel):
    """Who decided a gate: a human on a named ``surface`` (board, acp, omnigent, attach, demo, api),
    a rule (``rule_id`` and the rules file's ``rules_hash``), a front end's automatic policy (``auto``:
    its name in ``rule_id``, e.g. ``demo --auto``; no human saw the gate), agy's own terminal, agy's
    timeout, or an interrupt; ``user`` is the local user the harness ran as."""

    model_config = ConfigDict(frozen=True)

    kind: DeciderKind = "human"
    surface: str = ""
    user: str = ""
    rule_id: str = ""
    rules_hash: str = ""


class LedgerEntry(BaseModel):
    """One record for the decision ledger, before it is chained: ``type`` is ``decision`` (one per
    decided gate), ``delivery`` (whether agy took it) or ``outcome`` (what then ran and how it
    ended); ``body`` holds its JSON fields (strings, integers, booleans, lists, objects: no floats)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["decision", "delivery", "outcome"]
    body: dict[str, Any]


@runtime_checkable
class DecisionLedger(Protocol):
    """An append-only, tamper-evident record of every gate decision (adapters/store/ledger_file.py).

    ``record`` returns the record's sequence number once it is written to the ledger's file (a killed
    process no longer loses it; the fsync follows off the caller's path, so an operating-system crash
    can still lose the newest records: docs/ledger.md); it raises
    :class:`~agy_harness.ports.errors.LedgerUnavailable` when it could not be written (then the
    answer it records is not sent). It never blocks the event loop. A ``decision`` whose body holds
    ``"unless_decided": true`` (agy's terminal, as the stream showed it) is skipped, returning 0, when
    the ledger already holds a decision for its ``gate_id`` that agy may have taken (another session
    of this user made it; one whose ``delivery`` says ``taken: false`` does not count: agy then took
    another answer, and that is a decision too)."""

    async def record(self, entry: LedgerEntry) -> int: ...


@runtime_checkable
class CommandRedactor(Protocol):
    """A decision ledger that reads a command line's arguments to mask its secrets before keeping it
    (``mysql -pPW``, ``curl -u user:PW``, ``--password PW``: issue #46 item 6); without one, the
    recorder masks by :func:`agy_harness.core.decision_record.redact` alone."""

    def redact_command(self, text: str) -> str: ...

    def command_secrets(self, text: str) -> list[str]:
        """The secret values of the command line ``text`` (masked too where its output shows them)."""
        ...


@runtime_checkable
class DeciderLookup(Protocol):
    """A decision ledger that says who made the decision it holds for a gate (another session of this
    user, sharing the ledger): what a session that did not answer shows (issue #46 item 5)."""

    async def decider(self, gate_id: str) -> dict[str, Any] | None:
        """The newest decision recorded for ``gate_id`` that agy may have taken (none whose delivery
        says ``taken: false``): its ``decided_by``, ``verdict``, ``scope``, ``at`` (the record's
        time) and ``taken`` (True once agy took it, None while that is not recorded); None when there
        is none. Raises LedgerUnavailable when the ledger cannot be read."""
        ...
