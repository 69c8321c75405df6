"""Sub-agents as omnigent child sessions (a mixin of :class:`~.sink.OmnigentSink`).

* A SubagentStarted registers the child cascade with ``external_antigravity_subagent_start``; the
  child's events go to the child session omnigent answers with.
* **One child per sub-agent.** omnigent 0.19.1 keys a child by its title, ``<role>:<cascade>``
  (``_persist_external_antigravity_subagent_start``), so a registration with another role (the
  role-less one made for a child whose start this sink did not see: after a restart, re-delivering
  committed events) minted a second child. Before registering, the sink looks the child up among the
  parent's ``child_sessions`` by its cascade label (``omnigent.antigravity_native.subagent_cascade_id``)
  and keeps the one it finds; a start of a child it already knows posts nothing.
* **A poison registration is set aside.** A registration omnigent answers only with 5xx (while it
  takes other requests) is given ``poison_after`` deliveries of the transport's bounded retry
  (:class:`~.transport.RetryPolicy` ``deadline`` each); then, if omnigent answers a read of the
  parent session, it is refused for good (:class:`~agy_harness.ports.protocols.EventRefused`): the
  harness sets the SubagentStarted aside with a notice, stops reading that sub-agent, and the rest
  flows. omnigent down (the read fails too) keeps the stream held, lossless. A 4xx refuses at once.
"""

from __future__ import annotations

from typing import Any

import httpx

from agy_harness.core import safejson
from agy_harness.ports.events import SubagentStarted
from agy_harness.ports.protocols import EventRefused

from .transport import OmnigentStats, Poster, log
from .wire import subagent_data

CASCADE_LABEL = "omnigent.antigravity_native.subagent_cascade_id"
POISON_AFTER = 2  # deliveries of one registration that ran out of retries on 5xx answers alone


class Children:
    session_id: str
    poison_after: int
    stats: OmnigentStats
    _client: httpx.AsyncClient
    _headers: dict[str, str]
    _poster: Poster
    _main: str | None
    _sessions: dict[str, str]  # agy cascade -> omnigent session (the main one and children)
    _refused: dict[str, str]  # child cascades omnigent refused to register, and why
    _poison: dict[str, int]  # child cascade -> deliveries of its registration that got only 5xx

    def _url(self, session_id: str, tail: str) -> str:
        raise NotImplementedError

    def _events_url(self, session_id: str) -> str:
        raise NotImplementedError

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
        refused = self._refused.get(cascade_id)
        if refused is not None:
            raise EventRefused(refused)
        # a cascade whose start this sink did not see (a restart): register it under the main session
        start = SubagentStarted(
            id=f"{cascade_id}/registered", cascade_id=self._main, child_cascade_id=cascade_id
        )
        return await self._register_child(self.session_id, start, f"child cascade {cascade_id}")

    async def _register_child(self, parent: str, start: SubagentStarted, what: str) -> str | None:
        """The child session of ``start`` (found, or registered); None: not now (re-delivered later)."""
        child_cascade = start.child_cascade_id
        refused = self._refused.get(child_cascade)
        if refused is not None:
            raise EventRefused(refused)
        known = self._sessions.get(child_cascade)
        if known is not None:
            return known  # a re-delivered start: omnigent keeps one child
        found = await self._find_child(parent, child_cascade)
        if found is not None:
            self._sessions[child_cascade] = found
            return found
        body = {"type": "external_antigravity_subagent_start", "data": subagent_data(start)}
        outcome, answer = await self._poster.post(self._events_url(parent), body, what)
        if outcome == "rejected":  # for good: its events are quarantined by the harness, not retried
            self._refused[child_cascade] = f"omnigent refused to register {what}: {str(answer)[:200]}"
            raise EventRefused(self._refused[child_cascade])
        if outcome == "timeout" and await self._poisoned(parent, child_cascade, str(answer)):
            self._refused[child_cascade] = (
                f"omnigent answered the registration of {what} with {answer} on every attempt of "
                f"{self.poison_after} deliveries while it answers other requests: set aside"
            )
            log.error("%s", self._refused[child_cascade])
            raise EventRefused(self._refused[child_cascade])
        child = answer.get("child_session_id") if isinstance(answer, dict) else None
        if outcome != "ok" or not isinstance(child, str) or not child:
            if outcome == "ok":
                log.error("omnigent registered %s without a child_session_id: %r", what, answer)
            return None
        self._poison.pop(child_cascade, None)
        self._sessions[child_cascade] = child
        self.stats.children += 1
        return child

    async def _find_child(self, parent: str, child_cascade: str) -> str | None:
        """The parent's child session labelled with ``child_cascade`` (omnigent's first page of 100
        children), or None (none, or omnigent could not say: then the registration decides)."""
        try:
            response = await self._client.get(
                self._url(parent, "child_sessions"), params={"limit": 100}, headers=self._headers
            )
            if response.status_code != 200:
                return None
            rows = safejson.loads(response.content).get("data")
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        for row in rows if isinstance(rows, list) else []:
            labels: Any = row.get("labels") if isinstance(row, dict) else None
            if isinstance(labels, dict) and labels.get(CASCADE_LABEL) == child_cascade:
                child = row.get("id")
                if isinstance(child, str) and child:
                    return child
        return None

    async def _poisoned(self, parent: str, child_cascade: str, failure: str) -> bool:
        """Whether a registration whose delivery ran out of retries is poison: only 5xx answers, for
        ``poison_after`` deliveries, while omnigent answers a read of the parent session."""
        if not failure.startswith("HTTP 5"):
            return False  # no answer at all (omnigent down, a timeout): held, lossless
        seen = self._poison[child_cascade] = self._poison.get(child_cascade, 0) + 1
        if seen < self.poison_after:
            return False
        try:
            probe = await self._client.get(self._url(parent, "").rstrip("/"), headers=self._headers)
        except httpx.HTTPError:
            return False
        return probe.status_code == 200
