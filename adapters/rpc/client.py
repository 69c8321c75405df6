"""The async connect-RPC client for agy's loopback language server (aiohttp, HTTP/1.1 over TLS, JSON).

Why aiohttp over HTTP/1.1 and not httpx over HTTP/2 (measured by ``benchmarks/probe_transports.py``,
N streams + 200 Heartbeats against one simulator in another process, 2 shared cores):

* httpx/httpcore HTTP/2 on one connection has no reader task. Every waiting request reads the socket
  under a connection-wide lock, so a unary call queued behind idle streams misses its deadline while
  its answer sits in the buffer; at 100 streams the connection is full and call 101 waits forever
  (0 of 200 calls answered with 100 or 300 streams open). Closing a response does not reset its
  HTTP/2 stream either: agy keeps sending to an abandoned stream, its bytes are never acknowledged,
  and after ~16 MB the connection's receive window is gone, so every stream and call on it stalls.
* aiohttp HTTP/1.1 uses a connection per request in flight: a long-lived stream owns its own TCP
  connection (closing it is a real close agy sees at once, and no credit is shared), unary calls
  reuse a keep-alive pool. 300 streams + 200 calls: every call answered, p50 1.0 ms, 0.41 ms CPU a
  call, vs 2.1-2.9 ms for httpx HTTP/2 with a client per stream and 1.9-2.4 ms for httpx HTTP/1.1.
* It is also what the reference speaks to real agy (HTTP/1.1 over TLS).

What agy sends is bounded (:mod:`.bounded`): every string over ``max_string`` bytes is cut to a
marker as it arrives, an answer still over ``max_body`` is refused (RpcBadResponse, logged, the rest
never read), a frame still over it is skipped as a bad frame and the stream goes on.

Every unary call runs under ``asyncio.timeout(deadline)`` around the whole exchange (connect, send,
headers, body), so it meets its deadline whatever else is open. A stream's opening (up to its
response headers) has the client's timeout; after that it has no read deadline (the caller owns
idleness), and leaving it early - break, cancel, ``aclose`` - closes its connection. The connections
themselves (the pool, each peer checked before a byte is sent) are :mod:`.connections`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from agy_harness.core import safejson

from .bounded import MAX_BODY, MAX_STRING, BodyTooLarge, read_body
from .classify import error_from_response, raise_trailer, transport_error
from .codec import (
    FLAG_END_STREAM,
    HEADER_SIZE,
    BadFrame,
    EnvelopeDecoder,
    Frame,
    decode_payload,
    encode_envelope,
)
from .connections import Pool, new_pool
from .errors import (
    CodecError,
    CompressedFrameRefused,
    NonLoopbackError,
    RpcBadResponse,
    RpcUnreachable,
    StreamBroken,
)
from .listeners import is_loopback_host

log = logging.getLogger(__name__)

SERVICE = "exa.language_server_pb.LanguageServerService"
PROBE_TIMEOUT = 2.0
DEFAULT_TIMEOUT = 30.0
CSRF_HEADER = "x-codeium-csrf-token"
ERROR_BYTES = 64 * 1024  # of an error answer's body: its code and message
MAX_TRAILER = 1 << 20  # bytes of an end-of-stream trailer a probe reads

# connect protocol: HTTP status -> code, for error bodies that carry no code
# The transport failures aiohttp raises (ClientError covers connect, TLS, disconnects, payload errors).
_TRANSPORT_ERRORS = (aiohttp.ClientError, OSError, ssl.SSLError)


def check_loopback(base_url: str) -> URL:
    """Parse ``base_url``; raise NonLoopbackError unless it is http(s) to a loopback host."""
    try:
        url = URL(base_url)
        host = url.host
    except (ValueError, TypeError) as exc:
        raise NonLoopbackError(f"invalid base URL {base_url!r}: {exc}") from exc
    if url.scheme not in ("http", "https") or not host or not is_loopback_host(host):
        raise NonLoopbackError(f"refusing non-loopback agy URL {base_url!r}")
    return url


def _http_version(resp: aiohttp.ClientResponse) -> str:
    v = resp.version
    return f"HTTP/{v.major}.{v.minor}" if v is not None else ""


class RpcClient:
    """Calls ``exa.language_server_pb.LanguageServerService`` methods on one loopback base URL.

    The URL is checked before any connection exists, so a non-loopback URL never sends a byte.
    TLS certificates are not verified: agy's are self-signed and the peer is loopback-only.
    The aiohttp session is made on first use, inside the running loop.
    """

    def __init__(
        self, base_url: str, *, csrf_token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self._base = check_loopback(base_url)
        self._csrf = csrf_token
        self._timeout = timeout
        self._pool: Pool | None = None
        self._retired: list[Pool] = []
        self._closed = False  # by aclose: no new connection pool after it (nobody would close it)
        self.http_version = ""  # of the last response, e.g. "HTTP/1.1"
        #: limits on what agy sends (adapters/rpc/bounded.py): an answer or frame, one string in it
        self.max_body = MAX_BODY
        self.max_string = MAX_STRING
        self.pool_resets = 0

    def _new_pool(self) -> Pool:
        return new_pool(self._base, sock_connect=PROBE_TIMEOUT * 2)

    def reset_pool(self) -> None:
        """Stop reusing the pooled connection(s): the next call dials afresh.

        Done after a transport failure, a broken stream or a rebind. The old pool is closed as soon
        as its in-flight calls and streams are done.
        """
        if self._pool is None:
            return
        self._pool.retired = True
        self._retired.append(self._pool)
        self._pool = None
        self.pool_resets += 1

    @contextlib.asynccontextmanager
    async def _use(self, method: str) -> AsyncIterator[aiohttp.ClientSession]:
        if self._closed:  # a call after aclose would open a pool that nobody closes
            log.info("%s: the RPC client was closed; not calling", method)
            raise RpcUnreachable(method, 0, "unavailable", "the RPC client is closed")
        await self._reap()
        if self._pool is None:
            self._pool = self._new_pool()
        pool = self._pool
        pool.inflight += 1
        try:
            yield pool.http
        finally:
            pool.inflight -= 1
            await self._reap()

    async def _reap(self) -> None:
        if not self._retired:
            return
        idle = [p for p in self._retired if p.inflight == 0]
        self._retired = [p for p in self._retired if p.inflight > 0]
        for pool in idle:
            await pool.http.close()

    @property
    def base_url(self) -> str:
        return str(self._base).rstrip("/")

    @property
    def csrf_token(self) -> str | None:
        return self._csrf

    def rebind(self, base_url: str, *, csrf_token: str | None = None) -> None:
        """Point at another port (agy restarted) with that process's CSRF token (None: no header).

        Connections to the old port are dropped.
        """
        self._base = check_loopback(base_url)
        self._csrf = csrf_token
        self.reset_pool()

    def url(self, method: str) -> str:
        return f"{self.base_url}/{SERVICE}/{method}"

    def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Content-Type": content_type, "Connect-Protocol-Version": "1"}
        if self._csrf:
            headers[CSRF_HEADER] = self._csrf
        return headers

    async def call(
        self,
        method: str,
        body: dict[str, Any],
        *,
        timeout: float | None = None,
        max_string: int | None = None,
    ) -> dict[str, Any]:
        """A unary call. Returns the JSON object answer; raises an RpcError subclass otherwise.

        The whole exchange (connect, send, answer) is bounded by ``timeout`` (default: the client's);
        strings in the answer are cut at ``max_string`` bytes (default: the client's ``max_string``).
        """
        cut_at = self.max_string if max_string is None else max_string
        content = json.dumps(body, separators=(",", ":")).encode()
        deadline = self._timeout if timeout is None else timeout
        async with self._use(method) as http:
            try:
                async with (
                    asyncio.timeout(deadline),
                    http.post(
                        self.url(method), data=content, headers=self._headers("application/json")
                    ) as resp,
                ):
                    status = resp.status
                    self.http_version = _http_version(resp)
                    if 200 <= status < 300:
                        data, cuts = await read_body(
                            resp.content.iter_any(), max_body=self.max_body, max_string=cut_at
                        )
                        if cuts:
                            log.info("%s: %d string(s) over %d bytes cut", method, cuts, cut_at)
                    else:
                        data = await resp.content.read(ERROR_BYTES)
            except BodyTooLarge as exc:  # the connection is dropped unread, not reused
                (log.error if max_string is None else log.info)("%s: %s; refused", method, exc)
                raise RpcBadResponse(method, status, "resource_exhausted", str(exc)) from exc
            except (*_TRANSPORT_ERRORS, TimeoutError) as exc:
                self.reset_pool()
                raise transport_error(method, exc) from exc
        if not 200 <= status < 300:
            raise error_from_response(method, status, data)
        if not data.strip():
            return {}
        try:
            parsed = safejson.loads(data)  # one poisoned step is cut, not the whole answer
        except ValueError as exc:
            raise RpcBadResponse(method, status, "bad_response", f"invalid JSON: {exc}") from exc
        if not isinstance(parsed, dict):
            raise RpcBadResponse(method, status, "bad_response", f"not an object: {type(parsed)}")
        return parsed

    async def stream(
        self, method: str, body: dict[str, Any], progress: StreamProgress | None = None
    ) -> AsyncGenerator[Frame, None]:
        """A server-stream. Yields data frames (bad ones included, with ``bad`` set) until the trailer.

        Opening it (up to the response headers) has the client's timeout; then no read deadline:
        the caller owns idleness. Leaving early closes the stream's own connection, so agy stops
        sending at once. Raises RpcError (trailer error or HTTP error), CompressedFrameRefused, or
        StreamBroken (EOF/reset without a trailer, truncated frame). ``progress`` counts the bytes
        received (a big frame is minutes of bytes on a slow link, and no frame until its end).
        """
        headers = self._headers("application/connect+json")
        headers["Accept-Encoding"] = "identity"
        async with self._use(method) as http:
            try:
                async with asyncio.timeout(self._timeout):
                    resp = await http.post(self.url(method), data=encode_envelope(body), headers=headers)
            except (*_TRANSPORT_ERRORS, TimeoutError) as exc:
                self.reset_pool()
                raise transport_error(method, exc) from exc
            frames = self._frames(method, resp, progress or StreamProgress())
            try:
                async for frame in frames:
                    yield frame
            except StreamBroken:
                self.reset_pool()
                raise
            finally:
                resp.close()  # a real close of this stream's connection, whatever state it is in
                await frames.aclose()

    async def stream_opens(
        self, method: str, body: dict[str, Any], *, timeout: float = PROBE_TIMEOUT
    ) -> None:
        """Open a server-stream and close it as soon as its first envelope's 5-byte header says what
        it is: returns when that is a data frame (its payload, e.g. a whole conversation's replay, is
        never read or decoded), raises RpcError for an HTTP error or an error trailer. A stream that
        sends nothing within ``timeout`` raises RpcTimeout. The connection is closed either way."""
        headers = self._headers("application/connect+json")
        headers["Accept-Encoding"] = "identity"
        async with self._use(method) as http:
            try:
                async with asyncio.timeout(timeout):
                    resp = await http.post(self.url(method), data=encode_envelope(body), headers=headers)
                    try:
                        self.http_version = _http_version(resp)
                        if not 200 <= resp.status < 300:
                            raise error_from_response(
                                method, resp.status, await resp.content.read(ERROR_BYTES)
                            )
                        header = await resp.content.readexactly(HEADER_SIZE)
                        if header[0] & FLAG_END_STREAM:  # a trailer first: small, read it for its error
                            length = int.from_bytes(header[1:], "big")
                            if length > MAX_TRAILER:
                                raise StreamBroken(method, resp.status, "internal", "oversized trailer")
                            frame = decode_payload(header[0], await resp.content.readexactly(length))
                            raise_trailer(method, resp.status, frame)
                    finally:
                        resp.close()
            except asyncio.IncompleteReadError as exc:
                raise StreamBroken(
                    method, 0, "unavailable", "stream ended before its first envelope"
                ) from exc
            except (*_TRANSPORT_ERRORS, TimeoutError) as exc:
                self.reset_pool()
                raise transport_error(method, exc) from exc

    async def _frames(
        self, method: str, resp: aiohttp.ClientResponse, progress: StreamProgress
    ) -> AsyncGenerator[Frame, None]:
        self.http_version = _http_version(resp)
        if not 200 <= resp.status < 300:
            try:
                async with asyncio.timeout(self._timeout):
                    data = await resp.content.read(ERROR_BYTES)
            except (*_TRANSPORT_ERRORS, TimeoutError):
                data = b""
            raise error_from_response(method, resp.status, data)
        decoder = EnvelopeDecoder(max_frame=self.max_body, max_string=self.max_string)
        try:
            async for chunk in resp.content.iter_any():
                progress.received += len(chunk)
                for frame in decoder.feed(chunk):
                    if frame.bad is BadFrame.COMPRESSED:
                        raise CompressedFrameRefused(method, resp.status, "internal", frame.detail)
                    if frame.is_trailer:
                        raise_trailer(method, resp.status, frame)
                        return
                    yield frame
            decoder.close()
        except CodecError as exc:
            raise StreamBroken(method, resp.status, "unavailable", str(exc)) from exc
        except _TRANSPORT_ERRORS as exc:
            raise StreamBroken(method, resp.status, "unavailable", f"{type(exc).__name__}: {exc}") from exc
        raise StreamBroken(method, resp.status, "unavailable", "stream ended without a trailer")

    async def aclose(self) -> None:
        """Close every connection; a call after this raises RpcUnreachable ("closed")."""
        self._closed = True
        pools = [p for p in (self._pool, *self._retired) if p is not None]
        self._pool, self._retired = None, []
        for pool in pools:
            await pool.http.close()

    async def __aenter__(self) -> RpcClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass
class StreamProgress:
    received: int = 0  # bytes of the stream so far
