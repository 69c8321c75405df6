"""One pooled async connect-RPC client for agy's loopback language server (HTTP/2, JSON)."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from .codec import BadFrame, EnvelopeDecoder, Frame, encode_envelope
from .errors import (
    CodecError,
    CompressedFrameRefused,
    NonLoopbackError,
    RpcBadResponse,
    RpcError,
    RpcInputNotRegistered,
    RpcMethodNotFound,
    RpcTimeout,
    RpcUnreachable,
    StreamBroken,
)

log = logging.getLogger(__name__)

SERVICE = "exa.language_server_pb.LanguageServerService"
PROBE_TIMEOUT = 2.0
DEFAULT_TIMEOUT = 30.0
CSRF_HEADER = "x-codeium-csrf-token"

# connect protocol: HTTP status -> code, for error bodies that carry no code
_STATUS_CODES = {
    400: "internal",
    401: "unauthenticated",
    403: "permission_denied",
    404: "unimplemented",
    408: "deadline_exceeded",
    429: "unavailable",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback


def check_loopback(base_url: str) -> httpx.URL:
    """Parse ``base_url``; raise NonLoopbackError unless it is http(s) to a loopback host."""
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise NonLoopbackError(f"invalid base URL {base_url!r}: {exc}") from exc
    if url.scheme not in ("http", "https") or not is_loopback_host(url.host):
        raise NonLoopbackError(f"refusing non-loopback agy URL {base_url!r}")
    return url


def error_from_response(method: str, status: int, body: bytes) -> RpcError:
    """Map a non-2xx connect answer (JSON {"code","message"} or anything else) to a typed error."""
    code = _STATUS_CODES.get(status, "unknown")
    message = body[:500].decode(errors="replace").strip()
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        code = str(parsed.get("code") or code)
        message = str(parsed.get("message") or message)
    return make_error(method, status, code, message)


def make_error(method: str, status: int, code: str, message: str) -> RpcError:
    cls: type[RpcError] = RpcError
    if status == 404 or code == "unimplemented":
        cls = RpcMethodNotFound
    elif "input not registered" in message.lower():
        cls = RpcInputNotRegistered
    return cls(method, status, code, message)


def _transport_error(method: str, exc: httpx.TransportError) -> RpcError:
    if isinstance(exc, httpx.TimeoutException):
        return RpcTimeout(method, 0, "deadline_exceeded", str(exc) or type(exc).__name__)
    return RpcUnreachable(method, 0, "unavailable", str(exc) or type(exc).__name__)


class RpcClient:
    """Calls ``exa.language_server_pb.LanguageServerService`` methods on one loopback base URL.

    The URL is checked before the HTTP client exists, so a non-loopback URL never sends a byte.
    TLS certificates are not verified: agy's are self-signed and the peer is loopback-only.
    """

    def __init__(
        self,
        base_url: str,
        *,
        csrf_token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._base = check_loopback(base_url)
        self._csrf = csrf_token
        self._timeout = timeout
        self._transport = transport
        self._pool = self._new_pool()
        self._retired: list[_Pool] = []
        self.http_version = ""  # of the last response, e.g. "HTTP/2"
        self.pool_resets = 0

    def _new_pool(self) -> _Pool:
        return _Pool(
            httpx.AsyncClient(
                http2=True,
                verify=False,
                transport=self._transport,
                limits=httpx.Limits(max_connections=16, max_keepalive_connections=4),
            )
        )

    def reset_pool(self) -> None:
        """Stop reusing the pooled connection(s): the next call dials afresh.

        Done after a transport failure, a broken stream or a rebind, because a pooled HTTP/2
        connection may be half-open (every later call would wait out its whole timeout on it).
        The old pool is closed as soon as its in-flight calls are done. (With an injected
        ``transport`` this does nothing: that transport is the caller's to manage.)
        """
        if self._transport is not None:
            return
        self._pool.retired = True
        self._retired.append(self._pool)
        self._pool = self._new_pool()
        self.pool_resets += 1

    @contextlib.asynccontextmanager
    async def _use(self) -> AsyncIterator[httpx.AsyncClient]:
        await self._reap()
        pool = self._pool
        pool.inflight += 1
        try:
            yield pool.http
        finally:
            pool.inflight -= 1
            await self._reap()

    async def _reap(self) -> None:
        idle = [p for p in self._retired if p.inflight == 0]
        self._retired = [p for p in self._retired if p.inflight > 0]
        for pool in idle:
            await pool.http.aclose()

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
        self, method: str, body: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        """A unary call. Returns the JSON object answer; raises an RpcError subclass otherwise."""
        content = json.dumps(body, separators=(",", ":")).encode()
        async with self._use() as http:
            try:
                resp = await http.post(
                    self.url(method),
                    content=content,
                    headers=self._headers("application/json"),
                    timeout=self._timeout if timeout is None else timeout,
                )
            except httpx.TransportError as exc:
                self.reset_pool()
                raise _transport_error(method, exc) from exc
        self.http_version = resp.http_version
        if not resp.is_success:
            raise error_from_response(method, resp.status_code, resp.content)
        if not resp.content.strip():
            return {}
        try:
            parsed = json.loads(resp.content)
        except ValueError as exc:
            raise RpcBadResponse(method, resp.status_code, "bad_response", f"invalid JSON: {exc}") from exc
        if not isinstance(parsed, dict):
            raise RpcBadResponse(method, resp.status_code, "bad_response", f"not an object: {type(parsed)}")
        return parsed

    async def stream(self, method: str, body: dict[str, Any]) -> AsyncGenerator[Frame, None]:
        """A server-stream. Yields data frames (bad ones included, with ``bad`` set) until the trailer.

        No read deadline: the caller owns idleness. Raises RpcError (trailer error or HTTP error),
        CompressedFrameRefused, or StreamBroken (EOF/reset without a trailer, truncated frame).
        """
        timeout = httpx.Timeout(self._timeout, connect=PROBE_TIMEOUT * 2, read=None)
        headers = self._headers("application/connect+json")
        headers["Accept-Encoding"] = "identity"
        async with self._use() as http:
            request = http.build_request(
                "POST", self.url(method), content=encode_envelope(body), headers=headers, timeout=timeout
            )
            try:
                resp = await http.send(request, stream=True)
            except httpx.TransportError as exc:
                self.reset_pool()
                raise _transport_error(method, exc) from exc
            frames = self._frames(method, resp)
            try:
                async for frame in frames:
                    yield frame
            except StreamBroken:
                self.reset_pool()
                raise
            finally:
                await frames.aclose()
                await resp.aclose()

    async def _frames(self, method: str, resp: httpx.Response) -> AsyncGenerator[Frame, None]:
        self.http_version = resp.http_version
        if not resp.is_success:
            raise error_from_response(method, resp.status_code, await resp.aread())
        decoder = EnvelopeDecoder()
        try:
            async for chunk in resp.aiter_bytes():
                for frame in decoder.feed(chunk):
                    if frame.bad is BadFrame.COMPRESSED:
                        raise CompressedFrameRefused(method, resp.status_code, "internal", frame.detail)
                    if frame.is_trailer:
                        _raise_trailer(method, resp.status_code, frame)
                        return
                    yield frame
            decoder.close()
        except CodecError as exc:
            raise StreamBroken(method, resp.status_code, "unavailable", str(exc)) from exc
        except httpx.TransportError as exc:
            raise StreamBroken(
                method, resp.status_code, "unavailable", f"{type(exc).__name__}: {exc}"
            ) from exc
        raise StreamBroken(method, resp.status_code, "unavailable", "stream ended without a trailer")

    async def aclose(self) -> None:
        pools, self._retired = [self._pool, *self._retired], []
        for pool in pools:
            await pool.http.aclose()

    async def __aenter__(self) -> RpcClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass(eq=False)
class _Pool:
    http: httpx.AsyncClient
    inflight: int = 0
    retired: bool = False


def _raise_trailer(method: str, status: int, frame: Frame) -> None:
    if frame.bad is not None:
        raise StreamBroken(method, status, "internal", f"bad end-of-stream trailer: {frame.bad}")
    error = frame.trailer_error
    if error is not None:
        raise make_error(method, status, str(error.get("code") or "unknown"), str(error.get("message") or ""))
