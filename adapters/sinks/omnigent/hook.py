"""Gates parked on omnigent's elicitation hook (a mixin of :class:`~.sink.OmnigentSink`; see its doc)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.core import safejson
from agy_harness.core.answers import AnswerError
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


class GateAsks:
    session_id: str
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

    def _url(self, session_id: str, tail: str) -> str:
        raise NotImplementedError

    def _events_url(self, session_id: str) -> str:
        raise NotImplementedError

    async def _session_for(self, cascade_id: str) -> str | None:
        raise NotImplementedError

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
                elif status in TRANSIENT_STATUSES or status >= 500:
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
            answer = answer_from_result(gate, safejson.loads(response.content))
        except (AnswerError, OmnigentProtocolError, ValueError) as exc:
            self.stats.refused_answers += 1
            log.error("gate %s: refused the answer (%s); asking again", gate.gate_id, exc)
            text = f"The answer to agy's {'question' if gate.kind == 'question' else 'request'} was refused: {exc}. Please answer again."
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
        """Cancel an in-flight :meth:`ask` for ``gate_id`` and tell omnigent the gate is resolved."""
        tasks = self._asks.cancel(gate_id)
        await reap(*tasks)
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
