"""The omnigent event sink: domain events -> ``POST /v1/sessions/{id}/events``, gates -> a long-poll hook.

Wire mapping (:func:`to_wire`, pure; every body is ``{"type": ..., "data": {...}}`` and ``data``
always carries ``event_id`` = the event's deterministic id, also sent as the ``Idempotency-Key``
header, so omnigent can dedupe a re-delivery):

====================  ====================================  =====================================================
event                 ``type``                              ``data``
====================  ====================================  =====================================================
UserMessage           external_conversation_item            item_type "message", role "user", content, item_id
AssistantMessage      external_conversation_item            item_type "message", role "assistant", content,
                                                            item_id, message_id
ToolCall              external_conversation_item            item_type "function_call", call_id, name,
                                                            arguments (a JSON string), item_id
ToolResult            external_conversation_item            item_type "function_call_output", call_id, output,
                                                            item_id
StatusChanged         external_session_status               status ("running" | "idle" | "failed")
TextDelta             external_output_text_delta            delta, message_id, index, final
ReasoningDelta        external_output_reasoning_delta       delta, started
Usage                 external_session_usage                cumulative_input_tokens, cumulative_output_tokens,
                                                            cumulative_cache_read_input_tokens, model
ModelChanged          external_model_change                 model
GateWithdrawn         external_elicitation_resolved         elicitation_id (= gate_id); also cancels an ask for
                                                            that gate; not re-posted after :meth:`withdraw`
Rotation              external_session_status               status (unchanged: the last status delivered), and
                                                            rotation {old_cascade_id, new_cascade_id}
GateOpened            (not an event)                        it is the hook: :meth:`OmnigentSink.ask`
Notice                (not posted)                          logged by the sink at the notice's level
====================  ====================================  =====================================================

``item_id`` is the event id. Rotation does not invent a status: agy's ``/clear`` does not change
whether the agent is running, so the sink repeats the last status it delivered (``idle`` before any)
and adds the rotation as a note. Notices are the harness talking to a human; omnigent has no generic
note type, so they are logged, not posted (they are still counted as accepted).

Delivery is strictly in order, one request at a time (concurrent :meth:`OmnigentSink.deliver` calls
queue on a lock). Per event:

* 2xx: accepted. 409 Conflict: accepted (omnigent already has that ``event_id``).
* 408, 425, 429, 5xx, connect errors, timeouts, dropped connections: transient; retried with
  exponential backoff and jitter (``Retry-After`` honoured, capped) until the per-event
  :attr:`RetryPolicy.deadline`; then ``deliver`` returns the prefix accepted so far and the caller
  retries the rest later. Nothing is skipped for being slow.
* 401, 403, 404, 405, 410 and 3xx: the endpoint or credentials are wrong, not the event; every later
  event would fail the same way. Logged as an error and *not* accepted: the stream holds (lossless)
  until the configuration is fixed, instead of silently dropping everything.
* Any other 4xx (400, 413, 415, 422, ...): omnigent rejected this one body; it will never be accepted.
  Logged as an error with the response text, counted in :attr:`OmnigentStats.dropped`, and skipped
  (counted as accepted) so one bad event cannot wedge the stream forever.

Delivery is at-least-once: a request whose response is lost (connection dropped after omnigent
stored it) is sent again with the same ``event_id``.

Gates: :meth:`OmnigentSink.ask` POSTs ``/v1/sessions/{id}/hooks/antigravity-elicitation-request``
``{elicitation_id: gate_id, params: gate_params(gate)}`` and waits (a long-poll) for ``{action,
content}``. A read timeout (the long hold ended), 202/204/408/504, a transient status or a transport
error re-POSTs the same ``elicitation_id`` (idempotent on omnigent's side); a permanent 4xx raises
:class:`OmnigentRejected`; a 200 that is not a valid answer raises :class:`OmnigentProtocolError`.
The answer's ``content`` is read by :func:`parse_gate_response`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote

import httpx

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    ReasoningDelta,
    Rotation,
    RunStatus,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from agy_harness.ports.protocols import Clock, GateAnswer

log = logging.getLogger("agy_harness.adapters.sinks.omnigent")

HOOK_NAME = "antigravity-elicitation-request"

#: Retried with backoff (besides every 5xx).
TRANSIENT_STATUSES = frozenset({408, 425, 429})
#: The endpoint or the credentials are wrong: hold the stream (do not accept), do not skip.
HOLD_STATUSES = frozenset({401, 403, 404, 405, 410})
#: The long-poll ended without an answer: ask again.
REPOLL_STATUSES = frozenset({202, 204, 408, 504})

Wire = dict[str, Any]


# -- the mapping ---------------------------------------------------------------------------------


def _wire(kind: str, event: Event, data: dict[str, Any]) -> Wire:
    return {"type": kind, "data": {**data, "event_id": event.id}}


def to_wire(event: Event, *, status: RunStatus = "idle") -> Wire | None:
    """The omnigent body for ``event``, or ``None`` when it is not posted (GateOpened, Notice).

    ``status`` is the session status to repeat alongside a Rotation (the last one delivered).
    """
    if isinstance(event, UserMessage):
        return _wire(
            "external_conversation_item",
            event,
            {"item_type": "message", "role": "user", "content": event.text, "item_id": event.id},
        )
    if isinstance(event, AssistantMessage):
        return _wire(
            "external_conversation_item",
            event,
            {
                "item_type": "message",
                "role": "assistant",
                "content": event.text,
                "item_id": event.id,
                "message_id": event.message_id,
            },
        )
    if isinstance(event, ToolCall):
        return _wire(
            "external_conversation_item",
            event,
            {
                "item_type": "function_call",
                "call_id": event.call_id,
                "name": event.name,
                "arguments": json.dumps(event.arguments, ensure_ascii=False),
                "item_id": event.id,
            },
        )
    if isinstance(event, ToolResult):
        return _wire(
            "external_conversation_item",
            event,
            {
                "item_type": "function_call_output",
                "call_id": event.call_id,
                "output": event.output,
                "item_id": event.id,
            },
        )
    if isinstance(event, StatusChanged):
        return _wire("external_session_status", event, {"status": event.status})
    if isinstance(event, TextDelta):
        return _wire(
            "external_output_text_delta",
            event,
            {
                "delta": event.delta,
                "message_id": event.message_id,
                "index": event.index,
                "final": event.final,
            },
        )
    if isinstance(event, ReasoningDelta):
        return _wire(
            "external_output_reasoning_delta", event, {"delta": event.delta, "started": event.started}
        )
    if isinstance(event, Usage):
        return _wire(
            "external_session_usage",
            event,
            {
                "cumulative_input_tokens": event.cumulative_input_tokens,
                "cumulative_output_tokens": event.cumulative_output_tokens,
                "cumulative_cache_read_input_tokens": event.cumulative_cache_read_input_tokens,
                "model": event.model,
            },
        )
    if isinstance(event, ModelChanged):
        return _wire("external_model_change", event, {"model": event.model})
    if isinstance(event, GateWithdrawn):
        return _wire("external_elicitation_resolved", event, {"elicitation_id": event.gate_id})
    if isinstance(event, Rotation):
        return _wire(
            "external_session_status",
            event,
            {
                "status": status,
                "rotation": {"old_cascade_id": event.old_cascade_id, "new_cascade_id": event.new_cascade_id},
            },
        )
    if isinstance(event, GateOpened | Notice | SubagentStarted):
        return None
    raise TypeError(f"not a domain event: {type(event).__name__}")  # pragma: no cover


# -- gates: the form we post and the answer we read -------------------------------------------------

PERMISSION_FIELD = "allow"


def _permission_question(gate: GateOpened) -> str:
    p = gate.permission
    if p is None:
        return f"Allow {gate.tool_name or 'this action'}?"
    what = p.command_line or p.target or p.description or p.action or gate.tool_name or "this action"
    where = f" in {p.cwd}" if p.cwd else ""
    return f"Allow `{what}`{where}?"


def gate_params(gate: GateOpened) -> dict[str, Any]:
    """The gate as a question form (the hook's ``params``).

    Every gate has ``questions`` (each with a ``field`` name, the verbatim ``question``, ``options``
    with agy's ids and texts, ``multi_select`` and ``allow_write_in``); a permission gate has one
    yes/no question (option ids ``allow``/``deny``) plus ``permission`` with the command line and cwd.
    """
    questions: list[dict[str, Any]]
    permission: dict[str, Any] | None = None
    if gate.kind == "permission":
        p = gate.permission
        message = _permission_question(gate)
        questions = [
            {
                "field": PERMISSION_FIELD,
                "question": message,
                "options": [{"id": "allow", "text": "Allow"}, {"id": "deny", "text": "Deny"}],
                "multi_select": False,
                "allow_write_in": False,
            }
        ]
        permission = {
            "action": p.action if p else "",
            "target": p.target if p else "",
            "description": p.description if p else "",
            "command_line": p.command_line if p else "",
            "cwd": p.cwd if p else "",
        }
    else:
        questions = [
            {
                "field": f"q{i}",
                "question": q.question,
                "options": [{"id": o.id, "text": o.text} for o in q.options],
                "multi_select": q.multi_select,
                "allow_write_in": True,
            }
            for i, q in enumerate(gate.questions)
        ]
        message = "\n".join(q.question for q in gate.questions)
    return {
        "kind": gate.kind,
        "message": message,
        "gate_id": gate.gate_id,
        "cascade_id": gate.cascade_id,
        "trajectory_id": gate.trajectory_id,
        "step_index": gate.step_index,
        "tool_name": gate.tool_name,
        "questions": questions,
        "permission": permission,
    }


class OmnigentProtocolError(Exception):
    """omnigent answered the hook with something that is not ``{action, content}`` we can read."""


class OmnigentRejected(Exception):
    """omnigent refused a request permanently (a 4xx that retrying cannot fix)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _choices(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, bool):
        raise OmnigentProtocolError(f"{where}: expected option ids or labels, got {value!r}")
    if isinstance(value, str | int | float):
        return (str(value),) if str(value).strip() else ()
    if isinstance(value, list | tuple):
        out: list[str] = []
        for item in value:
            if isinstance(item, list | tuple | Mapping):
                raise OmnigentProtocolError(f"{where}: nested {type(item).__name__} in a choice list")
            out.extend(_choices(item, where))
        return tuple(out)
    raise OmnigentProtocolError(f"{where}: expected option ids or labels, got {type(value).__name__}")


def _lookup(content: Mapping[str, Any], field_name: str, question: str) -> tuple[bool, Any]:
    """The value for one question: keyed by field name, the verbatim question, or the folded question."""
    for key in (field_name, question):
        if key in content:
            return True, content[key]
    folded = _fold(question)
    for key, value in content.items():
        if _fold(key) == folded:
            return True, value
    return False, None


def _question_answer(gate: GateOpened, content: Any) -> GateAnswer:
    if content is None:
        return GateAnswer(selections=tuple(() for _ in gate.questions))
    if not isinstance(content, Mapping):
        raise OmnigentProtocolError(f"question content must be an object, got {type(content).__name__}")
    write_ins: tuple[str, ...] = ()
    raw_write_ins = content.get("write_ins")
    if isinstance(raw_write_ins, list):
        write_ins = tuple("" if w is None else str(w) for w in raw_write_ins)
    answers = content.get("answers")
    if isinstance(answers, list):
        selections = tuple(_choices(a, f"answers[{i}]") for i, a in enumerate(answers))
        return GateAnswer(selections=selections, write_ins=write_ins)
    picked: list[tuple[str, ...]] = []
    for i, q in enumerate(gate.questions):
        found, value = _lookup(content, f"q{i}", q.question)
        picked.append(_choices(value, repr(q.question)) if found else ())
    known = {f"q{i}" for i in range(len(gate.questions))} | {_fold(q.question) for q in gate.questions}
    unknown = [k for k in content if k != "write_ins" and k not in known and _fold(k) not in known]
    if unknown:
        log.warning("gate %s: answer keys match no question: %s", gate.gate_id, unknown)
    return GateAnswer(selections=tuple(picked), write_ins=write_ins)


_YES = frozenset({"true", "yes", "y", "allow", "allowed", "approve", "approved", "accept", "ok"})
_NO = frozenset({"false", "no", "n", "deny", "denied", "reject", "rejected", "decline"})


def _truth(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, list | tuple) and len(value) == 1:
        return _truth(value[0], where)
    if isinstance(value, str):
        word = _fold(value)
        if word in _YES:
            return True
        if word in _NO:
            return False
    raise OmnigentProtocolError(f"{where}: cannot read {value!r} as allow/deny")


def _permission_allow(gate: GateOpened, content: Any) -> bool:
    if content is None:
        return True  # action accept with no content = allow
    if not isinstance(content, Mapping):
        return _truth(content, "permission content")
    if PERMISSION_FIELD in content:
        return _truth(content[PERMISSION_FIELD], "allow")
    answers = content.get("answers")
    if isinstance(answers, list) and answers:
        return _truth(answers[0], "answers[0]")
    found, value = _lookup(content, PERMISSION_FIELD, _permission_question(gate))
    if found:
        return _truth(value, "permission answer")
    if not content:
        return True
    raise OmnigentProtocolError(f"permission content has no allow/deny: {dict(content)!r}")


def parse_gate_response(gate: GateOpened, payload: Any) -> GateAnswer:
    """omnigent's ``{action, content}`` -> a :class:`GateAnswer`.

    ``action`` decline/cancel refuses (a permission is denied). For ``accept``:

    * a question gate's ``content`` is ``{"answers": [[ids or labels], ...]}`` (one entry per
      question, a bare string for a single choice) or an object keyed by each question's text
      (verbatim or ignoring case and spacing) or field name (``q0``, ``q1``...) whose values are a
      label/id or a list of them; an optional ``write_ins`` list adds write-in text per question.
      Labels that match no option become the write-in (the core's elicitation policy).
    * a permission gate's ``content`` is ``{"allow": bool}`` (or "allow"/"deny", yes/no), or the
      form's answer (``{"answers": [["deny"]]}``, ``{"<question>": "Allow"}``); no content = allow.
    """
    if not isinstance(payload, Mapping):
        raise OmnigentProtocolError(f"hook answer must be an object, got {type(payload).__name__}")
    action = payload.get("action")
    if action not in ("accept", "decline", "cancel"):
        raise OmnigentProtocolError(f"hook answer has no valid action: {action!r}")
    if action != "accept":
        return GateAnswer(action=action, allow=False if gate.kind == "permission" else None)
    content = payload.get("content")
    if gate.kind == "permission":
        return GateAnswer(allow=_permission_allow(gate, content))
    return _question_answer(gate, content)


# -- the sink --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for transient failures: ``initial * multiplier**n`` capped at ``max_delay``, minus up
    to ``jitter`` of it at random; an event is given up on (for this ``deliver`` call) after
    ``deadline`` seconds."""

    initial: float = 0.1
    multiplier: float = 2.0
    max_delay: float = 5.0
    jitter: float = 0.5
    deadline: float = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        base = min(self.max_delay, self.initial * self.multiplier**attempt)
        delay = base * (1.0 - self.jitter * rng.random())
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_delay))
        return delay


@dataclass
class OmnigentStats:
    posted: int = 0  # events omnigent accepted (2xx)
    duplicates: int = 0  # 409: omnigent already had it
    not_posted: int = 0  # GateOpened, Notice, an already resolved gate
    dropped: int = 0  # permanently rejected and skipped
    held: int = 0  # deliveries stopped by an endpoint/credential error
    retries: int = 0  # transient failures retried (events and withdrawals)
    gave_up: int = 0  # deliveries that ran out of deadline
    asks: int = 0
    reconnects: int = 0  # long-poll re-POSTs
    rejected_bodies: list[str] = field(default_factory=list)  # event ids dropped


class _SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


Outcome = Literal["ok", "duplicate", "rejected", "held", "timeout"]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class OmnigentSink:
    """An :class:`~agy_harness.ports.protocols.EventSink` posting to omnigent (see the module doc).

    ``client`` is used as given (and not closed); without one the sink makes and owns a client (close
    it with :meth:`aclose` or ``async with``). ``token`` is sent as ``Authorization: Bearer``.
    ``request_timeout`` bounds an event POST; ``poll_timeout`` is the read timeout of the gate
    long-poll, after which it is re-POSTed.
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
    ) -> None:
        root = base_url.rstrip("/") + f"/v1/sessions/{quote(session_id, safe='')}"
        self.session_id = session_id
        self.events_url = root + "/events"
        self.hook_url = root + f"/hooks/{hook_name}"
        self.retry = retry or RetryPolicy()
        self.stats = OmnigentStats()
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient()
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = httpx.Timeout(request_timeout)
        self._poll_timeout = httpx.Timeout(request_timeout, read=poll_timeout)
        self._clock: Clock = clock or _SystemClock()
        self._rng = rng or random.Random()
        self._lock = asyncio.Lock()
        self._status: RunStatus = "idle"
        self._resolved: set[str] = set()
        self._children: set[str] = set()  # sub-agent cascades: their own streams, not this session's
        self._asks = PendingAsks()

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

    # -- events ---------------------------------------------------------------------------------

    async def deliver(self, events: Sequence[Event]) -> int:
        """Post ``events`` in order; return how many (a prefix) omnigent accepted or were skipped."""
        async with self._lock:
            accepted = 0
            for event in events:
                if not await self._deliver_one(event):
                    break
                accepted += 1
            return accepted

    async def _deliver_one(self, event: Event) -> bool:
        if isinstance(event, SubagentStarted):
            self._children.add(event.child_cascade_id)
        if event.cascade_id in self._children and not isinstance(event, GateWithdrawn):
            self.stats.not_posted += 1  # a sub-agent's own conversation is not the omnigent session's
            return True
        if isinstance(event, Notice):
            level = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}[event.level]
            log.log(level, "notice (not posted to omnigent): %s", event.text)
        if isinstance(event, GateWithdrawn):
            self._asks.cancel(event.gate_id)  # the gate is gone: stop asking even if the caller does not
            if event.gate_id in self._resolved:
                self.stats.not_posted += 1
                return True
        body = to_wire(event, status=self._status)
        if body is None:
            self.stats.not_posted += 1
            return True
        outcome = await self._post(body, event.id)
        if outcome in ("timeout", "held"):
            return False
        if outcome == "ok":
            self.stats.posted += 1
        elif outcome == "duplicate":
            self.stats.duplicates += 1
        else:
            self.stats.dropped += 1
            self.stats.rejected_bodies.append(event.id)
        if isinstance(event, StatusChanged):
            self._status = event.status
        if isinstance(event, GateWithdrawn):
            self._resolved.add(event.gate_id)
        return True

    async def _post(self, body: Wire, event_id: str) -> Outcome:
        deadline = self._clock.monotonic() + self.retry.deadline
        headers = {**self._headers, "Idempotency-Key": event_id}
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = await self._client.post(
                    self.events_url, json=body, headers=headers, timeout=self._timeout
                )
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return "ok"
                if status == 409:
                    log.info("event %s: omnigent already has it (409)", event_id)
                    return "duplicate"
                if status in TRANSIENT_STATUSES or status >= 500:
                    reason = f"HTTP {status}"
                    retry_after = _retry_after(response)
                elif status in HOLD_STATUSES or status < 400:
                    self.stats.held += 1
                    log.error(
                        "omnigent refused %s with HTTP %d (%s): endpoint or credentials wrong; "
                        "holding the stream at event %s until it is fixed",
                        self.events_url,
                        status,
                        response.text[:300],
                        event_id,
                    )
                    return "held"
                else:
                    log.error(
                        "omnigent rejected event %s (%s) with HTTP %d: %s; skipping it",
                        event_id,
                        body["type"],
                        status,
                        response.text[:300],
                    )
                    return "rejected"
            delay = self.retry.delay(attempt, self._rng, retry_after)
            if self._clock.monotonic() + delay > deadline:
                self.stats.gave_up += 1
                log.warning(
                    "event %s not delivered within %.1fs (%s); the caller will retry",
                    event_id,
                    self.retry.deadline,
                    reason,
                )
                return "timeout"
            self.stats.retries += 1
            log.info("event %s: %s; retrying in %.2fs", event_id, reason, delay)
            await self._clock.sleep(delay)
            attempt += 1

    # -- gates ----------------------------------------------------------------------------------

    async def ask(self, gate: GateOpened) -> GateAnswer:
        """Park ``gate`` on omnigent's hook and wait for the human's answer (hours, reconnecting)."""
        self.stats.asks += 1
        return await self._asks.run(gate.gate_id, self._long_poll(gate), f"omnigent-ask-{gate.gate_id}")

    async def _long_poll(self, gate: GateOpened) -> GateAnswer:
        body = {"elicitation_id": gate.gate_id, "params": gate_params(gate)}
        attempt = 0
        first = True
        while True:
            if not first:
                self.stats.reconnects += 1
            first = False
            try:
                response = await self._client.post(
                    self.hook_url, json=body, headers=self._headers, timeout=self._poll_timeout
                )
            except httpx.ReadTimeout:
                log.debug("gate %s: long-poll hold ended; asking again", gate.gate_id)
                attempt = 0
                continue
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}"
                retry_after = None
            else:
                status = response.status_code
                if status == 200:
                    try:
                        payload = response.json()
                    except ValueError as exc:
                        raise OmnigentProtocolError(
                            f"hook answer is not JSON: {response.text[:200]!r}"
                        ) from exc
                    answer = parse_gate_response(gate, payload)
                    log.info("gate %s answered: %s", gate.gate_id, answer)
                    return answer
                if status in REPOLL_STATUSES:
                    await self._clock.sleep(self.retry.initial)
                    attempt = 0
                    continue
                if status in TRANSIENT_STATUSES or status >= 500:
                    reason = f"HTTP {status}"
                    retry_after = _retry_after(response)
                else:
                    raise OmnigentRejected(
                        f"omnigent refused the elicitation hook for gate {gate.gate_id}: "
                        f"HTTP {status}: {response.text[:300]}",
                        status=status,
                    )
            delay = self.retry.delay(attempt, self._rng, retry_after)
            log.warning("gate %s: hook %s; reconnecting in %.2fs", gate.gate_id, reason, delay)
            await self._clock.sleep(delay)
            attempt += 1

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
            "data": {"elicitation_id": gate_id, "event_id": f"{gate_id}/resolved"},
        }
        async with self._lock:  # keep the events stream strictly ordered
            outcome = await self._post(body, f"{gate_id}/resolved")
        if outcome in ("ok", "duplicate", "rejected"):
            self._resolved.add(gate_id)
        else:
            log.warning("gate %s: could not tell omnigent it was withdrawn (%s)", gate_id, outcome)
