"""One conversation followed live: a harness session (the public API) whose events the board keeps
and fans out to the pages that watch it.

The session is :func:`~agy_harness.composition.root.session.session_from` over the composition root with
the default queue sink, so gates are answered by ``Session.answer`` and its fail-closed parser, and
the harness's gate bridge (re-read, re-target, retry) does the delivery. A board session never follows
``/clear`` (a new conversation is a new row) and claims nothing in the per-user claims directory
(the terminal's own session must stay free to follow its ``/clear``).

History: the session's first frame replays the conversation, so ``history`` starts at its first step.
It is bounded; streamed deltas are folded into one entry per message (a reply's deltas are dropped
once the reply is committed).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from typing import Any, assert_never

from agy_harness.core.steps import turn_of_user_key
from agy_harness.core.turns import Replies, UsageTotals
from agy_harness.ports.errors import AnswerNotDelivered
from agy_harness.ports.events import (
    AGY_REFUSED,
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
from agy_harness.ports.protocols import GateAnswer
from agy_harness.ports.tasks import reap

from ...root.container import make_container
from ...root.dependency_injection import providers
from ...root.session import AnswerLike, Session, session_from
from ...service.harness import HarnessOptions, InterruptReport
from .cards import card_of, event_view
from .outcomes import GateGone, NotLoaded, StaleCard, refused, withdrawn

log = logging.getLogger("agy_harness.board")

HISTORY = 4000
SUBSCRIBER_BACKLOG = 2000


NEWS = 512  # the last gates' withdrawal reasons and refusal notices kept (why an answer was late)
SETTLE = 3.0  # seconds an undelivered answer waits for the harness to say why


def _keep(book: dict[str, str], key: str, value: str) -> None:
    book[key] = value
    while len(book) > NEWS:
        del book[next(iter(book))]


class LiveSession:
    """Follows the root conversation ``cascade_id`` (and its sub-agents) on one agy."""

    def __init__(
        self,
        port: int,
        cascade_id: str,
        *,
        csrf_token: str | None = None,
        on_event: Callable[[LiveSession, Event], None] = lambda s, e: None,
    ) -> None:
        self.port = port
        self.cascade_id = cascade_id
        self._csrf = csrf_token
        self._on_event = on_event
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self._folded: dict[tuple[str, str], dict[str, Any]] = {}
        self.gates: dict[str, tuple[GateOpened, dict[str, Any]]] = {}
        self.texts: dict[str, str] = {}  # gate id -> the whole text of a card too large to carry it
        self._secret = secrets.token_bytes(32)  # keys the tickets of whole texts fetched (:meth:`whole`)
        self.turns: dict[str, str] = {}  # conversation -> its newest user message's executionId
        self._gate_of: dict[str, str] = {}  # a GateOpened event's id -> its gate id (notices name the event)
        self.withdrawn: dict[str, str] = {}  # gate id -> why it was withdrawn
        self.refusals: dict[str, str] = {}  # gate id -> the harness's last notice about it
        self._news = asyncio.Event()
        self.subscribers: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self.status: dict[str, str] = {}  # cascade -> running / idle / failed
        self.model = ""
        self.usage = UsageTotals()  # the root conversation's cumulative totals
        self._streams = {"text_delta": Replies(keep_text=False), "reasoning_delta": Replies(keep_text=False)}
        self.title = ""
        self.children: set[str] = set()
        self.last_event = time.time()
        self.error = ""
        self.session: Session | None = None
        self.ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"agy-board-{self.cascade_id[:8]}")

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await reap(self._task)
        for queue in list(self.subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)

    async def _run(self) -> None:
        container = make_container(
            port=self.port,
            cascade_id=self.cascade_id,
            csrf_token=self._csrf,
            options=HarnessOptions(follow_clear=False),
        )
        container.claims.override(providers.Object(None))  # claims nothing (see the module doc)
        try:
            async with session_from(container) as session:
                self.session = session
                self.ready.set()
                async for event in session.events():
                    self._apply(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("board: following %s failed: %s", self.cascade_id, self.error)
        finally:
            self.session = None
            self.ready.set()

    # -- events ------------------------------------------------------------------------------
    @property
    def tokens(self) -> tuple[int, int]:
        """The root conversation's cumulative (input, output) tokens."""
        return self.usage.input, self.usage.output

    def _apply(self, event: Event) -> None:
        self.last_event = time.time()
        card, text = card_of(event) if isinstance(event, GateOpened) else (None, None)
        view = event_view(event, card)
        root = event.cascade_id == self.cascade_id
        if isinstance(event, UserMessage):
            self.turns[event.cascade_id] = turn_of_user_key(event.step_key)
        match event:
            case GateOpened():
                self.gates[event.gate_id] = (event, view["card"])
                if text is not None:
                    self.texts[event.gate_id] = text
                else:
                    self.texts.pop(event.gate_id, None)
                _keep(self._gate_of, event.id, event.gate_id)
            case GateWithdrawn():
                self.gates.pop(event.gate_id, None)
                self.texts.pop(event.gate_id, None)
                _keep(self.withdrawn, event.gate_id, event.reason)
                self._tell()
            case Notice() if event.id.removesuffix("/notice") in self._gate_of:
                _keep(self.refusals, self._gate_of[event.id.removesuffix("/notice")], event.text)
                self._tell()
            case StatusChanged():
                self.status[event.cascade_id] = event.status
            case Usage() if root:
                self.usage.update(event)
                self.model = event.model or self.model
            case ModelChanged() if root:
                self.model = event.model
            case UserMessage() if root and not self.title:
                self.title = " ".join(event.text.split())[:90]
            case SubagentStarted():
                self.children.add(event.child_cascade_id)
            case (
                Usage()
                | ModelChanged()
                | UserMessage()
                | AssistantMessage()
                | ToolCall()
                | ToolResult()
                | TextDelta()
                | ReasoningDelta()
                | Rotation()
                | Notice()
            ):
                pass
            case other:
                assert_never(other)
        if not self._remember(event, view):
            return  # a replayed delta: already shown
        for queue in list(self.subscribers):
            try:
                queue.put_nowait(view)
            except asyncio.QueueFull:  # a page that stopped reading: it reconnects and replays
                self.subscribers.discard(queue)
        self._on_event(self, event)

    def _remember(self, event: Event, view: dict[str, Any]) -> bool:
        """Keep ``event`` in the history: a message's deltas folded into one entry, retired by the
        committed message (core/turns.py). False for a replayed delta (its index already seen)."""
        if isinstance(event, TextDelta | ReasoningDelta):
            if self._streams[event.type].delta(event.message_id, event.index, event.delta) is None:
                return False
            key = (event.type, event.message_id)
            folded = self._folded.get(key)
            if folded is None:  # (one evicted from the bounded history just stops growing)
                folded = self._folded[key] = dict(view)
                self.history.append(folded)
            else:
                folded["delta"] += view["delta"]
            return True
        if isinstance(event, AssistantMessage):
            self._streams["text_delta"].commit(event.message_id, event.text)
            folded = self._folded.pop(("text_delta", event.message_id), None)
            if folded is not None:
                with contextlib.suppress(ValueError):
                    self.history.remove(folded)
        self.history.append(view)
        return True

    def subscribe(self) -> tuple[list[dict[str, Any]], asyncio.Queue[dict[str, Any] | None]]:
        """The history so far and a queue of what comes next (None: the session ended)."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(SUBSCRIBER_BACKLOG)
        self.subscribers.add(queue)
        return [dict(v) for v in self.history], queue

    # -- what a human does -------------------------------------------------------------------
    def _session(self) -> Session:
        if self.session is None:
            raise RuntimeError(self.error or "this conversation is not connected (yet)")
        return self.session

    def cards(self) -> list[dict[str, Any]]:
        """The waiting gates' cards: those of the turn each conversation runs (its newest user
        message's executionId) first, then the others, each group in the order they came (issue #35
        case 8: a flood of gates no turn waits on, shown before the turn, never stacks above agy's
        real request; a gate or turn without an id moves nothing)."""

        def current(gate: GateOpened) -> bool:
            return bool(gate.turn) and gate.turn == self.turns.get(gate.cascade_id)

        entries = list(self.gates.values())
        return [card for gate, card in entries if current(gate)] + [
            card for gate, card in entries if not current(gate)
        ]

    def gate(self, gate_id: str) -> GateOpened:
        """The gate ``gate_id`` waiting now; GateGone / StaleCard (in words) when it is not."""
        entry = self.gates.get(gate_id)
        if entry is None:
            raise withdrawn(self.withdrawn.get(gate_id, ""))
        return entry[0]

    def whole(self, gate_id: str, shown: str) -> tuple[str, str]:
        """The whole text of the card ``shown`` of ``gate_id`` (a request too large for its card) and
        the ticket an allow of it carries (:meth:`answer`). GateGone when that card no longer waits
        (answered, withdrawn, or agy now asks something else: 410); KeyError for a card that carries
        its whole text itself."""
        self.gate(gate_id)  # GateGone / StaleCard, in words
        card = self.gates[gate_id][1]
        if card["shown"] != shown:
            raise GateGone("this card is no longer what agy asks; see the new card")
        return self.texts[gate_id], self.ticket(gate_id, shown)

    def ticket(self, gate_id: str, shown: str) -> str:
        """What only a fetch of the card's whole text gives (:meth:`whole`): an allow of such a card
        carries it, so nothing allows a request whose whole text was never fetched."""
        key = f"{gate_id}\n{shown}".encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, key, hashlib.sha256).hexdigest()[:32]

    async def answer(self, gate_id: str, value: AnswerLike, shown: str, ticket: str = "") -> None:
        """Answer ``gate_id`` with ``value`` (fail closed: ``Session.answer``), only if the card the
        human answered (its ``shown`` digest) is the card the board shows for it now, and, for a card
        too large to carry its whole text, an allow only with the ``ticket`` its fetch gave. Not
        delivered: GateGone (410), StaleCard (409), NotLoaded (400) or NotTaken (503), saying what
        happened (:mod:`.outcomes`)."""
        self.gate(gate_id)  # GateGone / StaleCard, in words
        card = self.gates[gate_id][1]  # built from this very event: its digest is the card's now
        if card["shown"] != shown:
            raise StaleCard(
                "the request changed since this card was shown; nothing was sent. Answer the new card"
            )
        denial = value is False or (isinstance(value, GateAnswer) and value.allow is False)
        given = ticket.encode("utf-8", "surrogatepass")
        if (
            "whole" in card
            and not denial
            and not hmac.compare_digest(given, self.ticket(gate_id, shown).encode())
        ):
            raise NotLoaded(
                "not sent: this request is too large for its card and its whole text was not loaded "
                "here; load the whole command on the card, read it, then allow it (or deny it)"
            )
        session = self._session()
        self.refusals.pop(gate_id, None)
        try:
            await session.answer(gate_id, value, surface="board")
        except AnswerNotDelivered:
            raise await self._why(gate_id) from None
        except KeyError:  # UnknownGate: the harness no longer has it
            raise withdrawn(self.withdrawn.get(gate_id, "")) from None

    async def _why(self, gate_id: str) -> Exception:
        """Why the harness did not deliver an answer to ``gate_id``: its notice, or the gate's
        withdrawal, once the session has seen either (at most SETTLE s)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE):
                # a gate set aside (agy refuses any answer to it): its notice comes first, then the
                # withdrawal that retires its card; the reply waits for both, so the board never
                # shows that card again after saying so
                while gate_id not in self.withdrawn and "set aside" in self.refusals.get(
                    gate_id, "set aside"
                ):
                    await self._news.wait()
        notice = self.refusals.get(gate_id, "")
        if notice.startswith(AGY_REFUSED):  # agy refused it: its card text, and where to answer it
            return GateGone(f"{notice}; nothing was delivered")
        if gate_id in self.withdrawn:
            return withdrawn(self.withdrawn[gate_id])
        return refused(notice)

    def _tell(self) -> None:
        self._news.set()
        self._news = asyncio.Event()

    async def send(self, text: str) -> str:
        return await self._session().send(text)

    async def interrupt(self) -> InterruptReport:
        return await self._session().interrupt()
