"""The omnigent event sink: ordered, batched, retried event posts; gates parked on omnigent's hook.

Delivery (:meth:`OmnigentSink.deliver`) is strictly in order, one request at a time (concurrent calls
queue on a lock). Runs of consecutive items for one session go out as one JSON array (up to
``batch_size``, omnigent's limit is 100); an array omnigent refuses is re-sent one body at a time so only
the bad body is skipped (items are idempotent, so re-sending the good ones stores nothing twice).
``deliver`` returns the accepted prefix; see :mod:`.transport` for what each HTTP answer means.

Sub-agents: a SubagentStarted registers the child cascade with
``external_antigravity_subagent_start`` (idempotent per cascade on omnigent's side) and the child's own
events go to the child session it answers with. An event of a cascade the sink has not seen start
(after a restart) registers it the same way. A child session has no omnigent runner, so its terminal
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
import contextlib
import random
from collections.abc import Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.core.answers import AnswerError
from agy_harness.ports.events import (
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Rotation,
    StatusChanged,
    SubagentStarted,
    Usage,
)
from agy_harness.ports.protocols import Clock, GateAnswer, ModelCatalog

from .gates import OmnigentProtocolError, answer_from_result, elicitation_id, gate_params
from .models import ModelNames
from .transport import OmnigentStats, Poster, RetryPolicy, SystemClock, log
from .wire import FAILED_TEXT, ITEM, Wire, is_item, source_id, to_wire

HOOK_NAME = "antigravity-elicitation-request"
REPOLL_STATUSES = frozenset({202, 204})


class OmnigentRejected(Exception):
    """omnigent refused a request permanently (a 4xx that retrying cannot fix)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class OmnigentSink:
    """An :class:`~agy_harness.ports.protocols.EventSink` posting to omnigent 0.19.1 (see the module doc).

    ``client`` is used as given (and not closed); without one the sink owns one (``aclose`` / ``async
    with``). ``token`` is sent as ``Authorization: Bearer``. ``cascade_id`` is the agy conversation this
    session mirrors (default: the first event's). ``model_catalog`` (agy's ``GetAvailableModels``) gives
    the display names omnigent shows; :meth:`bind_model_catalog` sets it later.
    """

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
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session_id = session_id
        self.hook_name = hook_name
        self.retry = retry or RetryPolicy()
        self.stats = OmnigentStats()
        self.batch_size = max(1, min(100, batch_size))
        self.models = ModelNames(model_catalog)
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient()
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
        self._resolved: set[str] = set()
        self._waiting: set[str] = set()  # gate ids whose ask set the session "waiting"
        self._asks = PendingAsks()
        self.events_url = self._events_url(session_id)
        self.hook_url = self._url(session_id, f"hooks/{hook_name}")

    def bind_model_catalog(self, catalog: ModelCatalog) -> None:
        self.models.bind(catalog)

    def _url(self, session_id: str, tail: str) -> str:
        return f"{self.base_url}/v1/sessions/{quote(session_id, safe='')}/{tail}"

    def _events_url(self, session_id: str) -> str:
        return self._url(session_id, "events")

    async def aclose(self) -> None:
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

    def child_session(self, cascade_id: str) -> str | None:
        """The omnigent child session mirroring a sub-agent cascade, once registered."""
        session = self._sessions.get(cascade_id)
        return session if session != self.session_id else None

    async def _session_for(self, cascade_id: str) -> str | None:
        if self._main is None:
            self._main = cascade_id
        if cascade_id == self._main:
            return self.session_id
        known = self._sessions.get(cascade_id)
        if known is not None:
            return known
        # a cascade whose start this sink did not see (a restart): register it under the main session
        return await self._register_child(self.session_id, cascade_id, "", f"child cascade {cascade_id}")

    async def _register_child(self, parent: str, child_cascade: str, call_id: str, what: str) -> str | None:
        body = {
            "type": "external_antigravity_subagent_start",
            "data": {"cascade_id": child_cascade, "role": "", "agent_type": "", "tool_call_id": call_id},
        }
        outcome, answer = await self._poster.post(self._events_url(parent), body, what)
        child = answer.get("child_session_id") if isinstance(answer, dict) else None
        if outcome != "ok" or not isinstance(child, str) or not child:
            if outcome == "ok":
                log.error("omnigent registered %s without a child_session_id: %r", what, answer)
            return None
        self._sessions[child_cascade] = child
        self.stats.children += 1
        return child

    # -- events ---------------------------------------------------------------------------------

    async def deliver(self, events: Sequence[Event]) -> int:
        """Post ``events`` in order; return how many (a prefix) omnigent accepted or were skipped."""
        async with self._lock:
            accepted = 0
            while accepted < len(events):
                done = await self._deliver_next(events, accepted)
                if done == 0:
                    break
                accepted += done
            return accepted

    async def _bodies(self, event: Event, session: str) -> list[Wire]:
        if isinstance(event, Usage | ModelChanged):
            await self.models.learn(event.model)
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

    async def _deliver_next(self, events: Sequence[Event], start: int) -> int:
        """Deliver events[start] (and following items for the same session, batched); 0 = stop here."""
        event = events[start]
        if isinstance(event, GateWithdrawn):
            self._asks.cancel(event.gate_id)  # the gate is gone: stop asking even if the caller does not
            if event.gate_id in self._resolved:
                self.stats.not_posted += 1
                return 1
        if isinstance(event, GateOpened):
            self.stats.not_posted += 1
            return 1
        if isinstance(event, SubagentStarted):
            parent = await self._session_for(event.cascade_id)
            if parent is None:
                return 0
            child = await self._register_child(
                parent, event.child_cascade_id, event.parent_call_id, f"sub-agent {event.id}"
            )
            if child is None:
                return 0  # held or timed out: re-delivered later (a rejection is logged and retried too)
            self.stats.posted += 1
            return 1
        session = await self._session_for(event.cascade_id)
        if session is None:
            return 0
        bodies = await self._bodies(event, session)
        run = [event]
        if len(bodies) == 1 and is_item(bodies[0]):
            for nxt in events[start + 1 : start + self.batch_size]:
                if isinstance(nxt, Usage | ModelChanged | GateWithdrawn | SubagentStarted | GateOpened):
                    break
                if nxt.cascade_id != event.cascade_id:
                    break
                more = to_wire(nxt, model_names=self.models.name)
                if more is None or not is_item(more):
                    break
                bodies.append(more)
                run.append(nxt)
        url = self._events_url(session)
        if len(bodies) > 1 and all(is_item(b) for b in bodies):
            outcome, _ = await self._poster.post(url, bodies, f"{len(bodies)} items from {event.id}")
            if outcome == "rejected":  # find the one bad body: re-send singly (idempotent)
                return await self._singly(url, run, bodies)
        else:
            outcome = "ok"
            for body in bodies:
                outcome, _ = await self._poster.post(url, body, f"event {event.id} ({body['type']})")
                if outcome != "ok":
                    break
        if outcome in ("held", "timeout"):
            return 0
        self._count(run, outcome)
        await self._after(event)
        return len(run)

    async def _singly(self, url: str, run: list[Event], bodies: list[Wire]) -> int:
        done = 0
        for event, body in zip(run, bodies, strict=True):
            outcome, _ = await self._poster.post(url, body, f"event {event.id} ({body['type']})")
            if outcome in ("held", "timeout"):
                return done
            self._count([event], outcome)
            done += 1
        return done

    def _count(self, run: list[Event], outcome: str) -> None:
        if outcome == "ok":
            self.stats.posted += len(run)
            self.stats.requests += 1
        else:
            self.stats.dropped += len(run)
            self.stats.rejected_bodies.extend(e.id for e in run)

    async def _after(self, event: Event) -> None:
        if isinstance(event, GateWithdrawn):
            self._resolved.add(event.gate_id)
            await self._unblock(event.gate_id, "withdrawn", locked=True)
        if isinstance(event, Rotation):
            self._sessions.pop(event.old_cascade_id, None)
            self._main = event.new_cascade_id

    # -- gates ----------------------------------------------------------------------------------

    async def ask(self, gate: GateOpened) -> GateAnswer:
        """Park ``gate`` on omnigent's hook and wait for the human's answer (hours, reconnecting)."""
        self.stats.asks += 1
        return await self._asks.run(gate.gate_id, self._ask(gate), f"omnigent-ask-{gate.gate_id}")

    async def _status(self, session: str, data: dict[str, Any], what: str) -> None:
        async with self._lock:  # keep the events stream strictly ordered
            await self._poster.post(
                self._events_url(session), {"type": "external_session_status", "data": data}, what
            )

    async def _ask(self, gate: GateOpened) -> GateAnswer:
        async with self._lock:
            session = await self._session_for(gate.cascade_id) or self.session_id
        params = gate_params(gate)
        if session == self.session_id:
            self._waiting.add(gate.gate_id)
            blocked = str(params["message"])[:200]
            await self._status(
                session, {"status": "waiting", "blocked_on": blocked}, f"gate {gate.gate_id} waiting"
            )
        answer = await self._long_poll(gate, session, params)
        await self._unblock(gate.gate_id, "answered")
        return answer

    async def _unblock(self, gate_id: str, why: str, *, locked: bool = False) -> None:
        """The gate no longer blocks the session: back to ``running`` (agy carries on)."""
        if gate_id not in self._waiting:
            return
        self._waiting.discard(gate_id)
        body = {"type": "external_session_status", "data": {"status": "running"}}
        if locked:
            await self._poster.post(self.events_url, body, f"gate {gate_id} {why}")
        else:
            await self._status(self.session_id, body["data"], f"gate {gate_id} {why}")

    async def _long_poll(self, gate: GateOpened, session: str, params: dict[str, Any]) -> GateAnswer:
        body = {"elicitation_id": elicitation_id(gate.gate_id), "params": params}
        url = self._url(session, f"hooks/{self.hook_name}")
        attempt = 0
        first = True
        while True:
            if not first:
                self.stats.reconnects += 1
            first = False
            try:
                response = await self._client.post(
                    url, json=body, headers=self._headers, timeout=self._poll_timeout
                )
            except httpx.ReadTimeout:
                log.debug("gate %s: long-poll hold ended; asking again", gate.gate_id)
                attempt = 0
                continue
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if status == 200:
                    answer = await self._read_verdict(gate, session, response)
                    if answer is not None:
                        return answer
                    reason = "no answer yet"
                elif status in REPOLL_STATUSES:
                    reason = f"HTTP {status}: no answer yet"
                elif status in {408, 425, 429} or status >= 500:
                    reason = f"HTTP {status}"
                else:
                    raise OmnigentRejected(
                        f"omnigent refused the elicitation hook for gate {gate.gate_id}: "
                        f"HTTP {status}: {response.text[:300]}",
                        status=status,
                    )
            delay = self.retry.delay(attempt, self._rng)
            log.info("gate %s: %s; asking again in %.2fs", gate.gate_id, reason, delay)
            await self._clock.sleep(delay)
            attempt += 1

    async def _read_verdict(
        self, gate: GateOpened, session: str, response: httpx.Response
    ) -> GateAnswer | None:
        if not response.content.strip():
            self.stats.empty_answers += 1  # omnigent's timeout, a disconnect, resolved elsewhere
            return None
        try:
            answer = answer_from_result(gate, response.json())
        except (AnswerError, OmnigentProtocolError, ValueError) as exc:
            self.stats.refused_answers += 1
            log.error("gate %s: refused the answer (%s); asking again", gate.gate_id, exc)
            text = f"The answer to agy's {'question' if gate.kind == 'question' else 'request'} was refused: {exc}. Please answer again."
            item = {
                "type": "external_conversation_item",
                "data": {
                    "item_type": "error",
                    "item_data": {"source": "harness", "code": "agy_answer_refused", "message": text},
                    "source_id": f"{gate.id}/refused/{self.stats.refused_answers}",
                },
            }
            async with self._lock:
                await self._poster.post(self._events_url(session), item, f"gate {gate.gate_id} refusal")
            return None
        log.info("gate %s answered: %s", gate.gate_id, answer)
        return answer

    async def withdraw(self, gate_id: str) -> None:
        """Cancel an in-flight :meth:`ask` for ``gate_id`` and tell omnigent the gate is resolved."""
        tasks = self._asks.cancel(gate_id)
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if gate_id in self._resolved:
            return
        body: Wire = {
            "type": "external_elicitation_resolved",
            "data": {"elicitation_id": elicitation_id(gate_id)},
        }
        async with self._lock:
            outcome, _ = await self._poster.post(self.events_url, body, f"gate {gate_id} resolved")
            await self._unblock(gate_id, "withdrawn", locked=True)
        if outcome in ("ok", "rejected"):
            self._resolved.add(gate_id)
        else:
            log.warning("gate %s: could not tell omnigent it was withdrawn (%s)", gate_id, outcome)
