"""Gates parked on omnigent's elicitation hook (a mixin of :class:`~.sink.OmnigentSink`; see its doc).

Retiring a card (:meth:`GateAsks.retire`) follows the order omnigent 0.19.1 honours
(``server/routes/_sessions/orchestration.py _publish_and_wait_for_harness_elicitation``): a parked hook
ends, and the card leaves every surface at once, only when ``external_elicitation_resolved`` reaches it
WHILE it is parked (its ``resolved_elsewhere`` event). A hook whose request was cancelled first is a
"severed wait": omnigent keeps its card 30 s for a re-park (``_HARNESS_ELICITATION_REPARK_GRACE_S``)
and the later resolve only leaves a tombstone. So: stop re-parking, tell omnigent while the hook is
parked, let the hook answer its empty 200, and only then cancel what is left. Should the card still
be pending (no hook was parked at that instant: between two re-parks), it is closed with an
``approval`` ``cancel``, which omnigent's approval path publishes as resolved whatever is parked.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any
from urllib.parse import quote

import httpx

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.core import safejson
from agy_harness.core.answers import AnswerError
from agy_harness.core.kinds import describe
from agy_harness.ports.errors import AgyHarnessError
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import Clock, GateAnswer
from agy_harness.ports.tasks import reap

from .gates import OmnigentProtocolError, answer_from_result, elicitation_id, gate_params
from .transport import TRANSIENT_STATUSES, OmnigentStats, Poster, RetryPolicy, log
from .wire import Wire, digest, source_id

HOOK_NAME = "antigravity-elicitation-request"
REPOLL_STATUSES = frozenset({202, 204})


class OmnigentRejected(AgyHarnessError):
    """omnigent refused a request permanently (a 4xx that retrying cannot fix)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


RETIRE_WAIT = 1.0  # seconds a parked hook gets to answer its empty 200 once told the gate is gone


class _GateClosed(Exception):  # never leaves this module: ask() turns it into a cancel
    """The gate was retired while it was being asked: no verdict is read, nothing re-parked."""


class GateAsks:
    session_id: str
    session_status: bool
    events_url: str
    hook_name: str
    retry: RetryPolicy
    stats: OmnigentStats
    _client: httpx.AsyncClient
    _headers: dict[str, str]
    _poll_timeout: httpx.Timeout
    _clock: Clock
    _rng: random.Random
    _poster: Poster
    _lock: asyncio.Lock
    _resolved: set[str]
    _waiting: set[str]
    _asks: PendingAsks
    _closed: set[str]  # gates retired: their asks stop
    _gate_sessions: dict[str, str]  # gate id -> the omnigent session its card is parked in
    _shown: dict[str, asyncio.Task[None]]  # gates only agy's terminal answers, shown as cards
    _retiring: set[asyncio.Task[None]]

    def _url(self, session_id: str, tail: str) -> str:
        raise NotImplementedError

    def _events_url(self, session_id: str) -> str:
        raise NotImplementedError

    async def _session_for(self, cascade_id: str) -> str | None:
        raise NotImplementedError

    # -- gates ----------------------------------------------------------------------------------

    async def ask(self, gate: GateOpened) -> GateAnswer:
        """Park ``gate`` on omnigent's hook and wait for the human's answer (hours, reconnecting).

        A gate retired meanwhile (agy stopped waiting) ends the ask as cancelled."""
        self.stats.asks += 1
        task = self._asks.start(gate.gate_id, self._ask(gate), f"omnigent-ask-{gate.gate_id}")
        try:
            return await asyncio.shield(task)
        except _GateClosed:
            raise asyncio.CancelledError(f"gate {gate.gate_id} withdrawn") from None
        except asyncio.CancelledError:
            if not task.done():  # the asker stopped asking (the session ends, a Stop): the card goes,
                retiring = asyncio.create_task(self.withdraw(gate.gate_id))  # the hook still parked
                self._retiring.add(retiring)
                retiring.add_done_callback(self._retiring.discard)
            raise

    def show(self, gate: GateOpened) -> None:
        """A gate only agy's terminal can answer: a card that says so, parked until agy moves on (the
        harness never asks it; :meth:`retire` retires it)."""
        if gate.gate_id in self._closed or gate.gate_id in self._shown:
            return

        async def card() -> None:
            with contextlib.suppress(asyncio.CancelledError, _GateClosed, OmnigentRejected):
                await self.ask(gate)

        self._shown[gate.gate_id] = asyncio.create_task(card(), name=f"omnigent-card-{gate.gate_id}")

    def showing(self, gate_id: str) -> bool:
        """Whether ``gate_id`` is a card :meth:`show` put up and nothing retired yet."""
        task = self._shown.get(gate_id)
        return task is not None and not task.done() and gate_id not in self._resolved

    async def _status(self, session: str, data: dict[str, Any], what: str) -> None:
        async with self._lock:  # keep the events stream strictly ordered
            await self._poster.post(
                self._events_url(session), {"type": "external_session_status", "data": data}, what
            )

    async def _ask(self, gate: GateOpened) -> GateAnswer:
        async with self._lock:
            session = await self._session_for(gate.cascade_id) or self.session_id
        params = gate_params(gate)
        if session == self.session_id and self.session_status:
            self._waiting.add(gate.gate_id)
            blocked = str(params["message"])[:200]
            await self._status(
                session, {"status": "waiting", "blocked_on": blocked}, f"gate {gate.gate_id} waiting"
            )
        self._gate_sessions[gate.gate_id] = session
        answer = await self._long_poll(gate, session, params)
        await self._unblock(gate.gate_id, "answered")
        return answer

    async def _unblock(self, gate_id: str, why: str, *, locked: bool = False) -> None:
        """The gate no longer blocks the session: back to ``running`` (agy carries on)."""
        if gate_id not in self._waiting:
            return
        self._waiting.discard(gate_id)
        data: dict[str, Any] = {"status": "running"}
        if locked:
            body = {"type": "external_session_status", "data": data}
            await self._poster.post(self.events_url, body, f"gate {gate_id} {why}")
        else:
            await self._status(self.session_id, data, f"gate {gate_id} {why}")

    async def _long_poll(self, gate: GateOpened, session: str, params: dict[str, Any]) -> GateAnswer:
        body = {"elicitation_id": elicitation_id(gate.gate_id), "params": params}
        url = self._url(session, f"hooks/{self.hook_name}")
        attempt = 0
        first = True
        failing_since: float | None = None  # the hook fails (5xx, no connection) since then
        told = False
        while True:
            if gate.gate_id in self._closed:
                raise _GateClosed(gate.gate_id)
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
                    failing_since = None
                    answer = await self._read_verdict(gate, session, response)
                    if answer is not None:
                        return answer
                    reason = "no answer yet"
                elif status in REPOLL_STATUSES:
                    failing_since = None
                    reason = f"HTTP {status}: no answer yet"
                elif status in TRANSIENT_STATUSES or status >= 500:
                    reason = f"HTTP {status}"
                else:
                    raise OmnigentRejected(
                        f"omnigent refused the elicitation hook for gate {gate.gate_id}: "
                        f"HTTP {status}: {response.text[:300]}",
                        status=status,
                    )
            if not reason.endswith("no answer yet"):
                now = self._clock.monotonic()
                failing_since = now if failing_since is None else failing_since
                if not told and now - failing_since >= self.retry.deadline:
                    told = True  # once per gate: the card is still tried, lossless
                    await self._unshown(gate, session, reason, now - failing_since)
            delay = self.retry.delay(attempt, self._rng)
            log.info("gate %s: %s; asking again in %.2fs", gate.gate_id, reason, delay)
            await self._clock.sleep(delay)
            attempt += 1

    async def _unshown(self, gate: GateOpened, session: str, reason: str, seconds: float) -> None:
        """omnigent has not taken ``gate``'s card for ``seconds`` (the bounded retry's deadline): one
        error item says so in the session (the card is still tried; agy's terminal can answer it)."""
        self.stats.unshown += 1
        log.warning("gate %s: omnigent has not taken its card for %.0fs (%s)", gate.gate_id, seconds, reason)
        text = (
            f"{describe(gate)}: omnigent has not taken this request's card for {seconds:.0f} s "
            f"({reason}); it is tried again, and agy still waits: it can be answered in agy's "
            "terminal (agy-harness attach)"
        )
        item = {
            "type": "external_conversation_item",
            "data": {
                "item_type": "error",
                "item_data": {"source": "harness", "code": "agy_card_unshown", "message": text},
                "source_id": source_id(f"{gate.id}/unshown"),  # the same after a restart: stored once
            },
        }
        async with self._lock:
            await self._poster.post(self._events_url(session), item, f"gate {gate.gate_id} unshown")

    async def _read_verdict(
        self, gate: GateOpened, session: str, response: httpx.Response
    ) -> GateAnswer | None:
        if gate.gate_id in self._closed:
            raise _GateClosed(gate.gate_id)  # a verdict for a gate agy no longer waits on reaches nobody
        if not response.content.strip():
            self.stats.empty_answers += 1  # omnigent's timeout, a disconnect, resolved elsewhere
            return None
        try:
            answer = answer_from_result(gate, safejson.loads(response.content))
        except (AnswerError, OmnigentProtocolError, ValueError) as exc:
            self.stats.refused_answers += 1
            log.error("gate %s: refused the answer (%s); asking again", gate.gate_id, exc)
            text = (
                "Nothing was sent to agy: it waits for this in agy's terminal; answer it there."
                if gate.kind == "other" or not gate.answerable
                else f"The answer to agy's {'question' if gate.kind == 'question' else 'request'} "
                f"was refused: {exc}. Please answer again."
            )
            item = {
                "type": "external_conversation_item",
                "data": {
                    "item_type": "error",
                    "item_data": {"source": "harness", "code": "agy_answer_refused", "message": text},
                    # named by what was refused: the same on a re-ask after a restart (no counter)
                    "source_id": source_id(f"{gate.id}/refused/{digest(response.text, 16)}"),
                },
            }
            async with self._lock:
                await self._poster.post(self._events_url(session), item, f"gate {gate.gate_id} refusal")
            return None
        log.info("gate %s answered: %s", gate.gate_id, answer)
        return answer

    async def withdraw(self, gate_id: str) -> None:
        """The gate is gone: retire its card (see :meth:`retire`)."""
        async with self._lock:
            await self.retire(gate_id)

    async def retire(self, gate_id: str) -> str:
        """agy stopped waiting on ``gate_id``: take its card off every omnigent surface, in the order
        omnigent honours (module doc). Called with ``_lock`` held. Returns the post's outcome."""
        self._closed.add(gate_id)
        if gate_id in self._resolved:
            return "ok"
        session = self._gate_sessions.get(gate_id, self.session_id)
        eid = elicitation_id(gate_id)
        body: Wire = {"type": "external_elicitation_resolved", "data": {"elicitation_id": eid}}
        outcome, _ = await self._poster.post(self._events_url(session), body, f"gate {gate_id} resolved")
        asks = self._asks.tasks(gate_id) if gate_id in self._gate_sessions else set()
        if asks:  # a parked hook answers its empty 200 now; an ask not yet parking is just cancelled
            await asyncio.wait(asks, timeout=RETIRE_WAIT)
        await reap(*self._asks.cancel(gate_id))
        if gate_id in self._gate_sessions and await self._still_pending(session, eid):
            cancel = {"type": "approval", "data": {"elicitation_id": eid, "action": "cancel"}}
            log.info("gate %s: its card outlived the hook; closing it", gate_id)
            outcome, _ = await self._poster.post(self._events_url(session), cancel, f"gate {gate_id} closed")
        await self._unblock(gate_id, "withdrawn", locked=True)
        if outcome in ("ok", "rejected"):
            self._resolved.add(gate_id)
        else:
            log.warning("gate %s: could not tell omnigent it was withdrawn (%s)", gate_id, outcome)
        return outcome

    async def _still_pending(self, session: str, eid: str) -> bool:
        """What omnigent's approval page reads (its in-memory pending index)."""
        try:
            response = await self._client.get(
                self._url(session, f"elicitations/{quote(eid, safe='')}"), headers=self._headers
            )
            response.raise_for_status()
            return bool(safejson.loads(response.content).get("status") == "pending")
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            log.info("could not read whether %s is still pending (%s); closing it", eid, exc)
            return True

    async def retire_all(self) -> None:
        """The session ends: every card still parked is retired (bounded)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2 * RETIRE_WAIT + 3.0):
                if self._retiring:
                    await asyncio.wait(set(self._retiring))
                gates = [g for g in self._asks.gate_ids() if g not in self._resolved]
                if gates:
                    async with self._lock:
                        for gate_id in gates:
                            await self.retire(gate_id)
