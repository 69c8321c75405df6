"""Reading the REAL omnigent server back, and answering its gates the way its web UI does."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy, source_id
from agy_harness.composition.root.session import Session, open_session
from agy_harness.composition.service.conversation import HarnessOptions
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer, ModelCatalog
from tests.real_omnigent import create_session

ITEM_EVENT_TYPES = frozenset(
    {"user_message", "assistant_message", "tool_call", "tool_result", "rotation", "notice"}
)


def stored_item_id(session_id: str, event_id: str) -> str:
    """The id omnigent 0.19.1 gives an item posted with ``source_id`` (its ``_new_external_conversation_item``)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"omnigent-external-item:{session_id}:{source_id(event_id)}").hex


class Omnigent:
    """A client of the real server for the tests (the web UI's routes)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(base_url=base_url, timeout=30.0)
        self.watched: list[dict[str, Any]] = []
        self.watching = asyncio.Event()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def items(self, session_id: str) -> list[dict[str, Any]]:
        r = await self.http.get(f"/v1/sessions/{session_id}/items", params={"limit": 1000})
        r.raise_for_status()
        return list(r.json()["data"])

    async def session(self, session_id: str) -> dict[str, Any]:
        r = await self.http.get(f"/v1/sessions/{session_id}")
        r.raise_for_status()
        return dict(r.json())

    async def children(self, session_id: str) -> list[dict[str, Any]]:
        r = await self.http.get(f"/v1/sessions/{session_id}/child_sessions", params={"limit": 100})
        r.raise_for_status()
        return list(r.json()["data"])

    async def pending(self, session_id: str) -> list[dict[str, Any]]:
        return list((await self.session(session_id)).get("pending_elicitations") or [])

    async def wait_pending(
        self, session_id: str, *, not_in: Sequence[str] = (), timeout: float = 20.0
    ) -> dict[str, Any]:
        """The first pending elicitation card (its id not in ``not_in``), as the web UI lists it."""
        async with asyncio.timeout(timeout):
            while True:
                for card in await self.pending(session_id):
                    if card.get("elicitation_id") not in not_in:
                        return card
                await asyncio.sleep(0.05)

    async def resolve(self, session_id: str, elicitation_id: str, body: dict[str, Any]) -> httpx.Response:
        """The web UI's answer: POST .../elicitations/{encodeURIComponent(id)}/resolve."""
        from urllib.parse import quote

        return await self.http.post(
            f"/v1/sessions/{quote(session_id, safe='')}/elicitations/{quote(elicitation_id, safe='')}/resolve",
            json=body,
        )

    async def post_event(self, session_id: str, body: Any) -> httpx.Response:
        return await self.http.post(f"/v1/sessions/{session_id}/events", json=body)

    async def snapshot_events(self, session_id: str, timeout: float = 30.0) -> list[dict[str, Any]]:
        """What a NEW web subscriber of the session's stream gets on connecting (up to the presence
        snapshot that closes the snapshot-on-connect)."""
        events: list[dict[str, Any]] = []
        async with (
            asyncio.timeout(timeout),
            self.http.stream("GET", f"/v1/sessions/{session_id}/stream") as response,
        ):
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if not payload or payload == "[DONE]":
                    continue
                event = json.loads(payload)
                events.append(event)
                if str(event.get("type", "")).startswith("session.presence"):
                    return events
        return events

    async def watch(self, session_id: str, event_type: str) -> list[dict[str, Any]]:
        """Events of ``event_type`` a web subscriber of the session gets, until cancelled (then returned
        through :attr:`watched`)."""
        self.watched = []
        self.watching.clear()
        async with self.http.stream("GET", f"/v1/sessions/{session_id}/stream", timeout=None) as response:
            async for line in response.aiter_lines():
                self.watching.set()  # subscribed: the stream's first frame arrived
                if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                    event = json.loads(line[5:])
                    if event.get("type") == event_type:
                        self.watched.append(event)
        return self.watched


class Tee:
    """An EventSink in front of the OmnigentSink recording what it accepted (the harness's truth)."""

    def __init__(self, inner: OmnigentSink) -> None:
        self.inner = inner
        self.accepted: list[Event] = []
        self.gates: list[GateOpened] = []

    def bind_model_catalog(self, catalog: ModelCatalog) -> None:
        self.inner.bind_model_catalog(catalog)

    async def deliver(self, events: Sequence[Event]) -> int:
        n = await self.inner.deliver(events)
        self.accepted.extend(events[:n])
        return n

    async def ask(self, gate: GateOpened) -> GateAnswer:
        self.gates.append(gate)
        return await self.inner.ask(gate)

    async def withdraw(self, gate_id: str) -> None:
        await self.inner.withdraw(gate_id)


#: quick sink retries (the harness's options for these tests)
FAST = HarnessOptions(sink_retry=0.05, max_backoff=0.2)


@asynccontextmanager
async def mirrored(omni: Omnigent, **sim_options: Any) -> AsyncIterator[tuple[str, Simulator, Session]]:
    """A new omnigent session mirroring a simulator's conversation through the OmnigentSink (a Tee
    records what it accepted): ``(omnigent session id, simulator, harness session)``."""
    sid = await asyncio.to_thread(create_session, omni.base_url)
    options: dict[str, Any] = {"profile": "1.0.10", "gate_timeout": None, "pace": 0.02, **sim_options}
    async with (
        Simulator(**options) as sim,
        OmnigentSink(omni.base_url, sid, retry=RetryPolicy(initial=0.02, max_delay=0.2)) as sink,
        open_session(port=sim.port, cascade_id=sim.cascade_id, sink=Tee(sink), options=FAST) as session,
    ):
        yield sid, sim, session


#: a bounded sink retry: a body omnigent keeps refusing is given up on (set aside, told) within 0.5 s
BOUNDED = RetryPolicy(initial=0.02, max_delay=0.1, deadline=0.5)
#: how long a test waits on the real server (a condition, not a deadline a busy machine must meet)
WAIT = 60.0


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = WAIT) -> None:
    """Until ``await condition()`` holds (polled every 50 ms)."""
    async with asyncio.timeout(timeout):
        while not await condition():
            await asyncio.sleep(0.05)


class FaultProxy(httpx.AsyncBaseTransport):
    """In front of the real server (the sink's only way to it): a request :meth:`fault` answers gets
    that injected answer; every other goes through (counted in ``passed``)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.passed = 0

    async def fault(self, request: httpx.Request) -> httpx.Response | None:
        """The injected answer to ``request``, or None: it goes through to the real server."""
        return None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        injected = await self.fault(request)
        if injected is not None:
            return injected
        self.passed += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Proxied:
    """A harness session mirrored to a new omnigent session through a :class:`FaultProxy`."""

    sid: str  # the omnigent session's id
    sim: Simulator
    sink: OmnigentSink
    tee: Tee  # what the sink accepted
    session: Session


@asynccontextmanager
async def proxied(omni: Omnigent, proxy: FaultProxy, **sink_options: Any) -> AsyncIterator[Proxied]:
    """A new omnigent session mirroring a simulator's conversation through an OmnigentSink whose only
    way to the server is ``proxy`` (a :data:`BOUNDED` retry, and ``sink_options``)."""
    sid = await asyncio.to_thread(create_session, omni.base_url)
    async with (
        httpx.AsyncClient(transport=proxy) as client,
        Simulator(profile="1.0.10", gate_timeout=None, pace=0.02) as sim,
        OmnigentSink(omni.base_url, sid, client=client, retry=BOUNDED, **sink_options) as sink,
    ):
        tee = Tee(sink)
        async with open_session(port=sim.port, cascade_id=sim.cascade_id, sink=tee, options=FAST) as session:
            yield Proxied(sid, sim, sink, tee, session)


async def accept_and_run(omni: Omnigent, sid: str, sim: Simulator, command: str) -> None:
    """The web UI's accept of the session's pending card (taken: 202), and agy runs ``command``."""
    card = await omni.wait_pending(sid, timeout=WAIT)
    r = await omni.resolve(sid, card["elicitation_id"], {"action": "accept"})
    assert r.status_code == 202, r.text

    async def ran() -> bool:
        return any(c == command for c, _ in sim.executed)

    await until(ran)
