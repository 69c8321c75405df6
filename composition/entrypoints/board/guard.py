"""The board's door: every request must carry the run's secret token, name an allowed Host, and a
state-changing one must come from the board's own page.

* **Host** must be the address the board listens on (``127.0.0.1:PORT``, ``localhost:PORT``, or the
  ``--host`` given): a DNS-rebinding page on another name is refused.
* **Token**: a GET carries it as ``?token=`` (the URL printed at start, like Jupyter's; an
  ``EventSource`` cannot send headers) or in ``X-Board-Token``. A POST carries it in the
  ``X-Board-Token`` header only: another site's form or ``fetch`` cannot set that header without a
  CORS preflight, which the board never grants, so answers are CSRF-safe. No cookie is ever set.
* **A notification's link** (``GET /open/<ticket>``) needs no token: its single-use ticket is checked
  by the route itself, which grants only what that ticket opens (:mod:`.open_links`).
* **POST** must be ``application/json``; an ``Origin`` (browsers send one) must be the board's own,
  and ``Sec-Fetch-Site`` (when sent) ``same-origin``; the body is at most ``MAX_BODY`` bytes.
* Every response says: no framing (``frame-ancestors 'none'``: a one-click answer cannot be
  click-jacked), no referrer (the token stays here), no caching, no MIME sniffing.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 64 * 1024
OPEN_LINK = re.compile(r"/open/[A-Za-z0-9_-]{1,64}")  # a notification's link (:mod:`.open_links`)
TOKEN_HEADER = "x-board-token"
SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


class Guard:
    """ASGI middleware enforcing the rules above in front of ``app``."""

    def __init__(self, app: ASGIApp, token: str, hosts: set[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self.check(scope, headers)
        if refusal is not None:
            status, why = refusal
            await _plain(send, status, why)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, _limited(receive), secured)

    def check(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """None when the request may pass, else (status, reason)."""
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return 403, "this board answers only on the address it printed (Host refused)"
        method = scope["method"]
        if method == "GET" and OPEN_LINK.fullmatch(scope.get("path", "")):
            return None  # the route checks its single-use ticket (module doc)
        given = headers.get(TOKEN_HEADER, "")
        if method == "GET" and not given:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
        if not given or not hmac.compare_digest(given.encode(), self.token):
            return 403, "missing or wrong token: open the URL the board printed"
        if method == "GET":
            return None
        if method != "POST":
            return 405, "method not allowed"
        if not headers.get(TOKEN_HEADER):
            return 403, "a POST carries the token in the X-Board-Token header"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in self.hosts}:
            return 403, "cross-origin request refused"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, "cross-site request refused"
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return 415, "a POST body is application/json"
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return 413, f"a POST body is at most {MAX_BODY} bytes"
        return None


def _limited(receive: Receive) -> Receive:
    """``receive`` that refuses a body (chunked, without a length) growing past MAX_BODY."""
    seen = 0

    async def guarded() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise BodyTooLarge
        return message

    return guarded


class BodyTooLarge(Exception):
    pass


async def _plain(send: Send, status: int, text: str) -> None:
    body = json.dumps({"error": text}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
