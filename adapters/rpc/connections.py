"""The RPC client's connections to agy (:mod:`.client`): a pool of aiohttp connections to one loopback
base URL, every new connection checked before a byte is sent -- the port's listening socket must be
the user's before dialling (:func:`~.listeners.listener_problem`), and the socket that accepted the
connection too, once made, before the TLS handshake (:func:`~.listeners.peer_problem`). TLS is not
verified: agy's certificate is self-signed and the peer is loopback-only."""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from .listeners import listener_problem, peer_problem

log = logging.getLogger("agy_harness.adapters.rpc.client")

KEEPALIVE = 15.0  # seconds an idle pooled connection is kept for the next unary call

_ssl_context: ssl.SSLContext | None = None


def _insecure_context() -> ssl.SSLContext:
    """agy's certificate is self-signed and the peer is loopback-only: no verification (built once)."""
    global _ssl_context
    if _ssl_context is None:
        # (not create_default_context: it loads the system's CA certificates, 40 ms of CPU per
        # process, for a verification that is off)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        _ssl_context = ctx
    return _ssl_context


def new_pool(base: URL, *, sock_connect: float) -> Pool:
    """A pool of connections to ``base`` (each checked, see the module doc); ``sock_connect``: how
    long a connection may take to open."""
    port, host = base.port, base.host
    base_url = str(base).rstrip("/")

    async def check_peer(*_args: object) -> None:  # before each new connection, not a byte sent
        # the kernel is asked (blocking: netlink, or /proc): off the loop, which keeps serving
        problem = await asyncio.to_thread(listener_problem, port, host) if port is not None else None
        if problem is not None:
            log.error("not connecting to %s: %s", base_url, problem)
            raise PeerRefused(problem)

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_start.append(check_peer)
    connector = _CheckedConnector(
        base_url=base_url,
        limit=0,  # no cap: a call never queues behind open streams
        ssl=_insecure_context(),
        keepalive_timeout=KEEPALIVE,
    )
    return Pool(
        aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=sock_connect),
            auto_decompress=True,
            trace_configs=[trace],
        )
    )


class _CheckedConnector(aiohttp.TCPConnector):
    """A connector that checks each new connection's other end once it is made, before the request
    (the csrf token) goes out: the socket that accepted it must be the user's
    (:func:`~.listeners.peer_problem`; the listener check before dialling cannot see a socket that
    took the connection meanwhile)."""

    def __init__(self, *, base_url: str, **kw: Any) -> None:
        super().__init__(**kw)
        self._url = base_url

    async def _create_connection(self, req: Any, traces: Any, timeout: Any) -> Any:
        proto = await super()._create_connection(req, traces, timeout)
        transport = getattr(proto, "transport", None)
        if transport is not None:
            ends = transport.get_extra_info("sockname"), transport.get_extra_info("peername")
            problem = await asyncio.to_thread(peer_problem, *ends)  # blocking (the kernel): off the loop
            if problem is not None:
                log.error("not using the connection to %s: %s", self._url, problem)
                proto.close()
                raise PeerRefused(problem)
        return proto


class PeerRefused(aiohttp.ClientConnectionError):
    """The port's listening socket is not the current user's (agy restarted, another user took the
    port): nothing is sent there, not even the TLS handshake."""


@dataclass(eq=False)
class Pool:
    http: aiohttp.ClientSession
    inflight: int = 0
    retired: bool = False
