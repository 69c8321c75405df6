"""A FAKE omnigent for fault injection only: a hand-written ASGI app recording what the omnigent sink
sends, with outage switches and a gate-answer queue. Served by hypercorn on 127.0.0.1 (a real socket)
inside the test's loop. Everything else is tested against the real omnigent 0.19.1 (tests/omnigent_real).

It accepts and refuses bodies by omnigent 0.19.1's own rules (omnigent_rules.py, the subset the sink
can send); ``tests/omnigent_real/test_fake_contract.py`` proves it answers every body the sink sends,
and a set of malformed ones, the way the real server does. Like the real server it takes a JSON array
of up to 100 events (applied in order, stopping at the first bad one), answers 202, mints a child
session for ``external_antigravity_subagent_start`` and answers the hook's timeout with an empty 200.

Switches (set them between or during requests; everything runs on the test's event loop):

* ``fail_next = N`` with ``fail_mode`` "503" (answer 503, ``Retry-After`` when ``retry_after`` is set)
  or "drop" (start a 200 response and close the connection before the body: the client sees a
  dropped connection). Failed requests are not recorded as received.
* ``outage_until = loop.time() + seconds``: every request fails (``fail_mode``) during the window.
* ``reject``: a function of the body returning an HTTP status to answer instead of accepting it.
* ``push_answer(response, elicitation_id=None)``: the answer a long-poll returns (for that id, or the
  next gate asked). An answer stays bound to its id, so a re-POST of the same id gets the same answer.
* ``hold``: seconds a long-poll waits before its empty 200 (None: until answered or disconnected).
* ``empty_next = N``: the next N hook POSTs answer an empty 200 at once (omnigent's "resolved elsewhere").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from hypercorn.asyncio.run import worker_serve
from hypercorn.config import Config
from hypercorn.utils import wrap_app

from .omnigent_rules import real_rules

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


@dataclass
class Hit:
    method: str
    path: str
    outcome: str  # "accepted", "failed", "rejected", "answered", "repoll", "disconnected"
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class OmnigentApp:
    def __init__(self, session_id: str = "sess-1", *, token: str | None = None) -> None:
        self.session_id = session_id
        self.token = token
        self.received: list[dict[str, Any]] = []  # accepted event bodies, in arrival order
        self.hook_posts: list[dict[str, Any]] = []  # every hook body that reached the long-poll
        self.child_received: dict[str, list[dict[str, Any]]] = {}  # child session id -> accepted bodies
        self.empty_next = 0
        self.hits: list[Hit] = []
        self.fail_next = 0
        self.fail_mode: Literal["503", "drop"] = "503"
        self.retry_after: float | None = None
        self.outage_until = 0.0
        self.reject: Callable[[dict[str, Any]], int | None] | None = None
        self.hold: float | None = None
        self.port = 0
        self._answers: dict[str, dict[str, Any]] = {}
        self._parked: dict[str, asyncio.Event] = {}  # eid -> set by external_elicitation_resolved
        self._queue: deque[dict[str, Any]] = deque()
        self._changed = asyncio.Condition()

    # -- test side ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def types(self) -> list[str]:
        return [b["type"] for b in self.received]

    def source_ids(self) -> list[str]:
        return [b["data"]["source_id"] for b in self.received if "source_id" in b["data"]]

    async def push_answer(self, response: dict[str, Any], elicitation_id: str | None = None) -> None:
        async with self._changed:
            if elicitation_id is None:
                self._queue.append(response)
            else:
                self._answers[elicitation_id] = response
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 60.0) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)

    async def _touch(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- the ASGI app -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        method, path = scope["method"], scope["path"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            await self._route(method, path, headers, body, receive, send)
        finally:
            await self._touch()

    async def _route(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, receive: Receive, send: Send
    ) -> None:
        hit = Hit(method, path, "failed", headers=headers)
        self.hits.append(hit)
        if self._failing():
            await self._fail(send)
            return
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            hit.outcome = "rejected"
            await _json(send, 401, {"error": "unauthorized"})
            return
        prefix = f"/v1/sessions/{self.session_id}"
        if method == "GET" and path.startswith(prefix + "/elicitations/"):  # the approval page
            hit.outcome = "accepted"
            parked = path.rsplit("/", 1)[-1] in self._parked
            await _json(send, 200, {"status": "pending" if parked else "resolved"})
            return
        if method == "GET":
            hit.outcome = "rejected"
            await _json(send, 404, {"error": "not found"})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            hit.outcome = "rejected"
            await _json(send, 400, {"error": "body is not JSON"})
            return
        hit.body = body
        child = path.removeprefix("/v1/sessions/").removesuffix("/events")
        if method == "POST" and path == prefix + "/events":
            await self._event(hit, body, send, self.received)
        elif method == "POST" and path.endswith("/events") and child in self.child_received:
            await self._event(hit, body, send, self.child_received[child])
        elif method == "POST" and path == prefix + "/hooks/antigravity-elicitation-request":
            await self._hook(hit, body, receive, send)
        else:
            hit.outcome = "rejected"
            await _json(send, 404, {"error": "not found"})

    def _failing(self) -> bool:
        if self.fail_next > 0:
            self.fail_next -= 1
            return True
        return asyncio.get_running_loop().time() < self.outage_until

    async def _fail(self, send: Send) -> None:
        if self.fail_mode == "drop":
            # promise a body, then end: hypercorn closes the connection mid-response
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"64")],
                }
            )
            return
        extra = [(b"retry-after", str(self.retry_after).encode())] if self.retry_after is not None else []
        await _json(send, 503, {"error": "unavailable"}, extra)

    async def _event(self, hit: Hit, body: Any, send: Send, into: list[dict[str, Any]]) -> None:
        batch = body if isinstance(body, list) else [body]
        if isinstance(body, list) and not 0 < len(body) <= 100:
            hit.outcome = "rejected"
            await _json(send, 400, {"error": "a batch holds 1..100 events"})
            return
        acks: list[dict[str, Any]] = []
        for one in batch:
            refusal = real_rules(one)
            status = self.reject(one) if refusal is None and self.reject is not None else None
            if refusal is not None or status is not None:
                hit.outcome = "rejected"  # like omnigent: the bodies before it stay applied
                await _json(send, status or refusal[0], {"error": refusal[1] if refusal else "rejected"})
                return
            into.append(one)
            eid = one["data"].get("elicitation_id")
            if one["type"] == "external_elicitation_resolved" and eid in self._parked:
                self._parked[eid].set()  # like omnigent: a parked hook ends with an empty 200
            elif one["type"] == "approval" and isinstance(eid, str):
                async with self._changed:
                    self._answers[eid] = {k: v for k, v in one["data"].items() if k != "elicitation_id"}
                    self._changed.notify_all()
            ack: dict[str, Any] = {"queued": False}
            if one["type"] == "external_antigravity_subagent_start":
                child = f"child-{one['data']['cascade_id']}"
                self.child_received.setdefault(child, [])
                ack["child_session_id"] = child
            acks.append(ack)
        hit.outcome = "accepted"
        await _json(send, 202, acks if isinstance(body, list) else acks[0])

    async def _hook(self, hit: Hit, body: Any, receive: Receive, send: Send) -> None:
        if not (isinstance(body, dict) and isinstance(body.get("elicitation_id"), str)):
            hit.outcome = "rejected"
            await _json(send, 422, {"error": "want {elicitation_id, params}"})
            return
        eid = body["elicitation_id"]
        if not isinstance(body.get("params"), dict) or not isinstance(body["params"].get("message"), str):
            hit.outcome = "rejected"
            await _json(send, 400, {"error": "params must be ElicitationRequestParams"})
            return
        self.hook_posts.append(body)
        await self._touch()
        if self.empty_next > 0:
            self.empty_next -= 1
            hit.outcome = "empty"
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return

        async def answered() -> dict[str, Any]:
            async with self._changed:
                await self._changed.wait_for(lambda: self._answer_for(eid) is not None)
                answer = self._answer_for(eid)
                assert answer is not None
                return answer

        async def disconnected() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        elsewhere = self._parked[eid] = asyncio.Event()
        waiter = asyncio.ensure_future(answered())
        gone = asyncio.ensure_future(disconnected())
        resolved = asyncio.ensure_future(elsewhere.wait())
        try:
            done, _ = await asyncio.wait(
                {waiter, gone, resolved}, timeout=self.hold, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            if self._parked.get(eid) is elsewhere:
                del self._parked[eid]
            for task in (waiter, gone, resolved):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if waiter in done:
            hit.outcome = "answered"
            await _json(send, 200, waiter.result())
        elif gone in done:
            hit.outcome = "disconnected"
        else:
            hit.outcome = "empty"  # omnigent's own timeout: an empty 200
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    def _answer_for(self, eid: str) -> dict[str, Any] | None:
        if eid not in self._answers and self._queue:
            self._answers[eid] = self._queue.popleft()
        return self._answers.get(eid)

    # -- serving ------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[OmnigentApp]:
        config = Config()
        config.bind = ["127.0.0.1:0"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 0.2
        sockets = config.create_sockets()
        self.port = sockets.insecure_sockets[0].getsockname()[1]
        stop = asyncio.Event()
        task = asyncio.create_task(
            worker_serve(
                wrap_app(self, config.wsgi_max_body_size, "asgi"),  # type: ignore[arg-type]
                config,
                sockets=sockets,
                shutdown_trigger=stop.wait,
            )
        )
        await _wait_listening(self.port)
        try:
            yield self
        finally:
            stop.set()
            try:
                await asyncio.wait_for(task, 5)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()


async def _json(
    send: Send, status: int, payload: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": data})


async def _wait_listening(port: int) -> None:
    for _ in range(500):
        try:
            _r, w = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        w.close()
        with contextlib.suppress(OSError):
            await w.wait_closed()
        return
    raise RuntimeError(f"test omnigent on {port} never listened")
