"""The omnigent event sink: ordered, batched, retried event posts; gates parked on omnigent's hook.

Delivery (:meth:`OmnigentSink.deliver`) is strictly in order, one request at a time (concurrent calls
queue on a lock). Runs of consecutive items for one session go out as one JSON array (up to
``batch_size``, omnigent's limit is 100); an array omnigent refuses is re-sent one body at a time so only
the bad body is skipped (items are idempotent, so re-sending the good ones stores nothing twice).
``deliver`` returns the accepted prefix; see :mod:`.transport` for what each HTTP answer means.

Sub-agents (:mod:`.children`): a SubagentStarted registers the child cascade with
``external_antigravity_subagent_start`` and the child's own events go to the child session it answers
with; one child per sub-agent, found again by its cascade label after a restart. A registration
omnigent refuses for good (a 4xx), or answers only with 5xx for ``poison_after`` bounded deliveries
while it takes other requests, raises :class:`~agy_harness.ports.protocols.EventRefused`: the harness
sets the SubagentStarted aside with a notice and stops reading that sub-agent, and the rest flows.
Any other event is held to the same rule: a batch that got only 5xx is sent again with its first
event alone; that event, answered only with 5xx for ``poison_after`` more deliveries while omnigent
answers a read of its session, is refused (:class:`EventRefused`: set aside with a notice, the rest
flows: a later permission is shown). omnigent down (the read fails too) keeps the stream held. A
child session has no omnigent runner, so its terminal
status cannot be ``external_session_status`` idle/failed (omnigent answers 503 "runner unavailable"
after having applied it): a child's idle is ``subagent.status {idle: true}``, its failure an error item
followed by that idle.

Gates (:meth:`OmnigentSink.ask`): the session goes ``waiting`` (``blocked_on`` = the gate's message),
then ``POST /v1/sessions/{id}/hooks/antigravity-elicitation-request {elicitation_id, params}`` parks
until the human answers (omnigent holds it up to 24 h). The answer is read fail-closed
(:mod:`.gates`). The hook's empty 200 (its own timeout, a disconnect, "resolved elsewhere") means
"no answer yet": the same elicitation is POSTed again (a verdict given meanwhile is handed to it); the
harness withdraws the ask when agy stops waiting. A verdict that does not answer the gate is refused
with a visible error item and the gate is asked again. When the answer is in, the session goes back to
``running`` before the answer is returned (before agy gets it, so a later ``idle`` stays last).

/clear: the new agy conversation continues in the same omnigent session after a visible boundary
item (see :mod:`.wire`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from types import TracebackType
from urllib.parse import quote

import httpx

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.adapters.sinks.model_names import ModelNames
from agy_harness.core.turns import Replies
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    Rotation,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    Usage,
)
from agy_harness.ports.protocols import Clock, EventRefused, ModelCatalog

from .children import POISON_AFTER, Children
from .hook import HOOK_NAME, GateAsks
from .transport import BoundedTransport, OmnigentStats, Poster, RetryPolicy, SystemClock, log
from .usage import UsageFloors
from .wire import FAILED_TEXT, ITEM, Wire, source_id, to_wire

POINTER_WORDS = "agy's terminal"  # a notice saying it, about a step whose card says it, is not posted


class OmnigentSink(Children, GateAsks):
    """An :class:`~agy_harness.ports.protocols.EventSink` posting to omnigent 0.19.1 (see the module doc).

    ``client`` is used as given (and not closed); without one the sink owns one (``aclose`` / ``async
    with``). ``token`` is sent as ``Authorization: Bearer``. ``cascade_id`` is the agy conversation this
    session mirrors (default: the first event's). ``model_catalog`` (agy's ``GetAvailableModels``) gives
    the display names omnigent shows; :meth:`bind_model_catalog` sets it later. ``session_status``
    False: a parked gate does not set the session ``waiting`` (where omnigent's runner owns the
    session's status: the harness plugin).
    """

    surface = "omnigent"  # where its human decides (the decision ledger)

    def __init__(
        self,
        base_url: str,
        session_id: str,
        *,
        client: httpx.AsyncClient | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        request_timeout: float = 10.0,
        poll_timeout: float = 300.0,
        hook_name: str = HOOK_NAME,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        cascade_id: str | None = None,
        model_catalog: ModelCatalog | None = None,
        batch_size: int = 100,
        session_status: bool = True,
        poison_after: int = POISON_AFTER,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session_id = session_id
        self.hook_name = hook_name
        self.retry = retry or RetryPolicy()
        self.stats = OmnigentStats()
        self.batch_size = max(1, min(100, batch_size))
        self.session_status = session_status
        self.poison_after = max(1, poison_after)
        self.models = ModelNames(model_catalog)
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(transport=BoundedTransport())
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._poll_timeout = httpx.Timeout(request_timeout, read=poll_timeout)
        self._clock: Clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._poster = Poster(
            self._client,
            headers=self._headers,
            timeout=httpx.Timeout(request_timeout),
            retry=self.retry,
            stats=self.stats,
            clock=self._clock,
            rng=self._rng,
        )
        self._lock = asyncio.Lock()
        self._main = cascade_id
        self._sessions: dict[str, str] = {}  # agy cascade -> omnigent session (the main one and children)
        # child cascades omnigent refused to register, and events set aside as poison: why
        self._refused: dict[str, str] = {}
        # child cascade (its registration) or event id -> its deliveries that got 5xx answers only
        self._poison: dict[str, int] = {}
        self._resolved: set[str] = set()
        self._waiting: set[str] = set()  # gate ids whose ask set the session "waiting"
        self._asks = PendingAsks()
        self._replies = Replies()  # the text deltas posted, retired by their committed messages
        self._closed: set[str] = set()
        self._gate_sessions: dict[str, str] = {}
        self._shown: dict[str, asyncio.Task[None]] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        self._committed_messages: set[str] = set()
        self._streaming: set[str] = set()  # messages with deltas posted
        self._pointed: dict[str, None] = {}  # steps whose card sends the human to agy's terminal
        self._usage = UsageFloors(self._client, self._url, self._headers)
        self.events_url = self._events_url(session_id)
        self.hook_url = self._url(session_id, f"hooks/{hook_name}")

    def bind_model_catalog(self, catalog: ModelCatalog) -> None:
        self.models.bind(catalog)

    def _url(self, session_id: str, tail: str) -> str:
        return f"{self.base_url}/v1/sessions/{quote(session_id, safe='')}/{tail}"

    def _events_url(self, session_id: str) -> str:
        return self._url(session_id, "events")

    async def aclose(self) -> None:
        await self.retire_all()  # the session ends: no card is left behind
        self._asks.cancel_all()
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> OmnigentSink:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- routing: which omnigent session an event belongs to ------------------------------------

    # -- events ---------------------------------------------------------------------------------

    async def deliver(self, events: Sequence[Event]) -> int:
        """Post ``events`` in order; return how many (a prefix) omnigent accepted or were skipped."""
        async with self._lock:
            # where each message is committed in this delivery (its last AssistantMessage), read once
            committed_at = {e.message_id: i for i, e in enumerate(events) if isinstance(e, AssistantMessage)}
            accepted = 0
            while accepted < len(events):
                try:
                    done = await self._deliver_next(events, accepted, committed_at)
                except EventRefused:
                    if accepted == 0:
                        raise  # the first event: the caller quarantines it
                    return accepted  # the accepted prefix first; the refusal comes on the next call
                if done == 0:
                    break
                accepted += done
            return accepted

    async def _bodies(self, event: Event, session: str, at: int, committed_at: dict[str, int]) -> list[Wire]:
        if isinstance(event, Usage | ModelChanged):
            await self.models.learn(event.model)
        if isinstance(event, TextDelta) and self._moot(event, committed_at.get(event.message_id, -1) > at):
            return []
        if isinstance(event, Usage) and not await self._usage.grows(event, session):
            return []
        if isinstance(event, Notice) and event.step_key in self._pointed and POINTER_WORDS in event.text:
            return []  # its card says "answer in agy's terminal" already: once (issue 45)
        if session != self.session_id and isinstance(event, StatusChanged) and event.status != "running":
            bodies: list[Wire] = []
            if event.status == "failed":
                message = event.reason.strip() or FAILED_TEXT
                item_data = {"source": "harness", "code": "native_turn_error", "message": message}
                data = {"item_type": "error", "item_data": item_data, "source_id": source_id(event.id)}
                bodies.append({"type": ITEM, "data": data})
            bodies.append({"type": "subagent.status", "data": {"idle": True}})
            return bodies
        body = to_wire(event, model_names=self.models.name)
        return [] if body is None else [body]

    async def _deliver_next(self, events: Sequence[Event], start: int, committed_at: dict[str, int]) -> int:
        """Deliver events[start] (and following items for the same session, batched); 0 = stop here."""
        event = events[start]
        if isinstance(event, GateWithdrawn):  # agy stopped waiting: its card leaves every surface
            if event.gate_id in self._resolved:
                self.stats.not_posted += 1
                return 1
            outcome = await self.retire(event.gate_id)
            if outcome in ("held", "timeout"):
                self._closed.discard(event.gate_id)
                return 0
            self._count([event], outcome)
            return 1
        if isinstance(event, GateOpened):
            if not event.answerable:
                self.show(event)  # only agy's terminal can answer it: a card that says so
                self._pointed[event.step_key] = None
                while len(self._pointed) > 256:
                    del self._pointed[next(iter(self._pointed))]
            self.stats.not_posted += 1
            return 1
        if isinstance(event, SubagentStarted):
            parent = await self._session_for(event.cascade_id)
            if parent is None:
                return 0
            child = await self._register_child(parent, event, f"sub-agent {event.id}")
            if child is None:
                return 0  # held or timed out: re-delivered later (a rejection is logged and retried too)
            self.stats.posted += 1
            return 1
        session = await self._session_for(event.cascade_id)
        if session is None:
            return 0
        if event.id in self._refused:  # set aside as poison: refused again at once (never re-posted)
            raise EventRefused(self._refused[event.id])
        bodies = await self._bodies(event, session, start, committed_at)
        if not bodies:  # a moot delta, a usage report omnigent already has
            self.stats.not_posted += 1
            return 1
        url = self._events_url(session)
        if len(bodies) > 1:  # a child's terminal status: its bodies in order, one request each
            for body in bodies:
                outcome, _ = await self._poster.post(url, body, f"event {event.id} ({body['type']})")
                if outcome in ("held", "timeout"):
                    return 0
            self._count([event], outcome)
            await self._after(event, shown=outcome == "ok")
            return 1
        run: list[tuple[Event, Wire | None]] = [(event, bodies[0])]
        limit = 1 if event.id in self._poison else self.batch_size  # a suspect goes alone
        for j in range(start + 1, min(len(events), start + limit)):
            nxt = events[j]
            if (
                isinstance(nxt, GateWithdrawn | SubagentStarted | GateOpened)
                or nxt.cascade_id != event.cascade_id
            ):
                break
            more = await self._bodies(nxt, session, j, committed_at)
            if len(more) > 1:
                break
            run.append((nxt, more[0] if more else None))
        batch = [body for _, body in run if body is not None]
        if len(batch) == 1:
            outcome, answer = await self._poster.post(url, batch[0], f"event {event.id} ({batch[0]['type']})")
        else:
            outcome, answer = await self._poster.post(url, batch, f"{len(batch)} events from {event.id}")
            if outcome == "rejected":  # find the bad body: re-send one by one (omnigent dedups repeats)
                return await self._singly(url, run)
        if outcome == "timeout" and str(answer).startswith("HTTP 5"):
            if event.id not in self._poison:
                self._poison[event.id] = 0  # sent alone from now on, its deliveries counted
            elif len(batch) == 1 and await self._poisoned(session, event.id, str(answer)):
                self._poison.pop(event.id, None)
                self._refused[event.id] = (
                    f"omnigent answered {event.type} {event.id} with {answer} on every attempt of "
                    f"{self.poison_after} deliveries while it answers other requests: set aside"
                )
                log.error("%s", self._refused[event.id])
                raise EventRefused(self._refused[event.id])
        if outcome in ("held", "timeout"):
            return 0
        self._poison.pop(event.id, None)
        for done, posted in run:
            if posted is None:
                self.stats.not_posted += 1
            else:
                self._count([done], outcome)
            await self._after(done, shown=posted is not None and outcome == "ok")
        if outcome == "ok":
            self.stats.requests += 1
        return len(run)

    def _moot(self, delta: TextDelta, committed_later: bool) -> bool:
        """A delta of a message already stored is not posted, nor a backlog's (a message none of whose
        deltas went out yet and which is committed later in this same delivery): omnigent would keep it
        as a preview that a deduplicated item never retires. A live message's deltas all go out."""
        if self._replies.committed(delta.message_id):
            return True
        if self._replies.streaming(delta.message_id):
            return False
        return committed_later

    async def _singly(self, url: str, run: list[tuple[Event, Wire | None]]) -> int:
        done = 0
        for event, body in run:
            if body is not None:
                outcome, _ = await self._poster.post(url, body, f"event {event.id} ({body['type']})")
                if outcome in ("held", "timeout"):
                    return done
                self._count([event], outcome)
                if outcome == "ok":
                    self.stats.requests += 1
            await self._after(event, shown=body is not None and outcome == "ok")
            done += 1
        return done

    def _count(self, run: list[Event], outcome: str) -> None:
        if outcome == "ok":
            self.stats.posted += len(run)
        else:
            self.stats.dropped += len(run)
            self.stats.rejected_bodies.extend(e.id for e in run)

    async def _after(self, event: Event, *, shown: bool) -> None:
        """Note what a delivered event changes; ``shown``: its body went out and omnigent took it."""
        if isinstance(event, Usage):
            session = (
                self.session_id if event.cascade_id == self._main else self._sessions.get(event.cascade_id)
            )
            self._usage.accepted(event, session or "")
        if isinstance(event, TextDelta) and shown:
            # only a delta omnigent got starts (or goes on with) a preview: a moot one never does, or
            # the message's later deltas, in a later request of the same delivery (its run of events
            # cut by a sub-agent's or a gate's), would go out as a preview without its start, which
            # omnigent (matching previews to stored messages by text) never retires
            self._replies.delta(event.message_id, event.index, event.delta)
        if isinstance(event, AssistantMessage):
            self._replies.commit(event.message_id, event.text)
        if isinstance(event, Rotation):
            self._sessions[event.old_cascade_id] = self.session_id  # a late event of the old one stays here
            self._main = event.new_cascade_id
