"""Posting to omnigent with retries: what each HTTP answer means for one body (or one batch).

* 2xx: accepted (409 too, should a future omnigent answer it for a duplicate).
* 408, 425, 429, 5xx, connect errors, timeouts, dropped connections: transient; retried with
  exponential backoff and jitter (``Retry-After`` honoured, capped) until :attr:`RetryPolicy.deadline`;
  then ``"timeout"``: the caller stops and re-delivers later. Nothing is skipped for being slow.
* 401, 403, 404, 405, 410 and 3xx: the endpoint or the credentials are wrong, not the body; every later
  body would fail the same way. ``"held"``: the stream stops (lossless) until it is fixed.
* any other 4xx (400, 413, 422, ...): omnigent refuses this body for good. ``"rejected"``.

Re-sending is safe for items (omnigent dedups them on ``source_id``); a live delta re-sent after a lost
response may render twice in a live preview, which the committed item then replaces.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from agy_harness.core import safejson
from agy_harness.ports.protocols import Clock

log = logging.getLogger("agy_harness.adapters.sinks.omnigent")

TRANSIENT_STATUSES = frozenset({408, 425, 429})
HOLD_STATUSES = frozenset({401, 403, 404, 405, 410})

Outcome = Literal["ok", "rejected", "held", "timeout"]


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff: ``initial * multiplier**n`` capped at ``max_delay``, minus up to ``jitter`` of it at random;
    one delivery is given up on (for this call) after ``deadline`` seconds."""

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
    posted: int = 0  # events omnigent accepted
    requests: int = 0  # event POSTs that omnigent accepted (a batch is one)
    not_posted: int = 0  # GateOpened; a gate already resolved
    dropped: int = 0  # permanently rejected and skipped
    held: int = 0  # deliveries stopped by an endpoint/credential error
    retries: int = 0  # transient failures retried
    gave_up: int = 0  # deliveries that ran out of deadline
    asks: int = 0
    reconnects: int = 0  # hook re-POSTs
    empty_answers: int = 0  # the hook's empty 200: no answer yet (timeout, resolved elsewhere)
    refused_answers: int = 0  # verdicts that did not answer the gate (fail-closed); asked again
    unshown: int = 0  # gates whose card omnigent did not take within the retry deadline (told once)
    children: int = 0  # sub-agent child sessions registered
    rejected_bodies: list[str] = field(default_factory=list)  # event ids dropped


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class Poster:
    """One event POST (a body or a JSON array of bodies) with the retry rules above."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        headers: dict[str, str],
        timeout: httpx.Timeout,
        retry: RetryPolicy,
        stats: OmnigentStats,
        clock: Clock,
        rng: random.Random,
    ) -> None:
        self.client = client
        self.headers = headers
        self.timeout = timeout
        self.retry = retry
        self.stats = stats
        self.clock = clock
        self.rng = rng

    async def post(self, url: str, body: Any, what: str) -> tuple[Outcome, Any]:
        """POST ``body``; the outcome and, for "ok", the decoded answer (None if not JSON); for
        "timeout", the last failure (``"HTTP 503"``, ``"ConnectError: ..."``)."""
        deadline = self.clock.monotonic() + self.retry.deadline
        attempt = 0
        while True:
            wait_hint: float | None = None
            try:
                response = await self.client.post(url, json=body, headers=self.headers, timeout=self.timeout)
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if 200 <= status < 300 or status == 409:
                    try:
                        return "ok", safejson.loads(response.content)
                    except ValueError:
                        return "ok", None
                if status in TRANSIENT_STATUSES or status >= 500:
                    reason = f"HTTP {status}"
                    wait_hint = retry_after(response)
                elif status in HOLD_STATUSES or status < 400:
                    self.stats.held += 1
                    log.error(
                        "omnigent refused %s with HTTP %d (%s): endpoint or credentials wrong; "
                        "holding the stream at %s until it is fixed",
                        url,
                        status,
                        response.text[:300],
                        what,
                    )
                    return "held", None
                else:
                    log.error("omnigent rejected %s with HTTP %d: %s", what, status, response.text[:300])
                    return "rejected", response.text[:300]
            delay = self.retry.delay(attempt, self.rng, wait_hint)
            if self.clock.monotonic() + delay > deadline:
                self.stats.gave_up += 1
                log.warning(
                    "%s not delivered within %.1fs (%s); the caller will retry",
                    what,
                    self.retry.deadline,
                    reason,
                )
                return "timeout", reason
            self.stats.retries += 1
            log.info("%s: %s; retrying in %.2fs", what, reason, delay)
            await self.clock.sleep(delay)
            attempt += 1


MAX_ANSWER = 16 << 20  # bytes of one omnigent answer (its answers are small JSON objects)


class _Bounded(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, request: httpx.Request, limit: int) -> None:
        self._inner, self._request, self._limit = inner, request, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                message = (
                    f"omnigent's answer to {self._request.url.path} is over {self._limit} bytes; not read"
                )
                log.error("%s", message)
                raise httpx.ReadError(message, request=self._request)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """omnigent's answers read up to ``limit`` bytes: a larger one is a logged ``ReadError`` (a
    failed request, retried like any other), never unbounded memory.

    Without an ``inner`` transport, one per URL scheme is made at its first request: ``http://`` (a
    loopback omnigent) needs no TLS, so no certificate store is loaded for it (httpx's default loads
    certifi's, ~30 ms of CPU per sink); ``https://`` verifies against the store httpx would use,
    loaded once per process (:func:`verified_context`)."""

    def __init__(self, limit: int = MAX_ANSWER, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._limit = limit
        self._inner = inner
        self._by_scheme: dict[str, httpx.AsyncHTTPTransport] = {}

    def _transport(self, request: httpx.Request) -> httpx.AsyncBaseTransport:
        if self._inner is not None:
            return self._inner
        scheme = request.url.scheme
        made = self._by_scheme.get(scheme)
        if made is None:
            tls = scheme != "http"  # (httpx itself refuses any scheme but http and https)
            made = httpx.AsyncHTTPTransport(verify=verified_context() if tls else _PLAIN)
            self._by_scheme[scheme] = made
        return made

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._transport(request).handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Bounded(response.stream, request, self._limit),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        for transport in [self._inner] if self._inner is not None else list(self._by_scheme.values()):
            await transport.aclose()


#: the context of the ``http://`` transport: never used (no TLS is spoken), and loads no certificates
_PLAIN = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
_verified: ssl.SSLContext | None = None


def verified_context() -> ssl.SSLContext:
    """httpx's default verifying context (certifi, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), made once
    per process: it is not changed once made."""
    global _verified
    if _verified is None:
        _verified = httpx.create_ssl_context()
    return _verified
