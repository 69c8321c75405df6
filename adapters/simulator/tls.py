"""The simulator's self-signed TLS material: one CA and one leaf for 127.0.0.1/localhost per process.

The key never stays on disk: it lives in memory, and an SSL context is loaded from a private temp
file that is unlinked as soon as OpenSSL has read it (``trustme``'s ``configure_cert``), so a
SIGKILLed simulator leaves no key behind.
"""

from __future__ import annotations

import ssl
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import trustme

_lock = threading.Lock()
_material: tuple[trustme.CA, trustme.LeafCert] | None = None
_contexts: dict[tuple[str, ...], ssl.SSLContext] = {}


def _ca_and_leaf() -> tuple[trustme.CA, trustme.LeafCert]:
    """Made once per process (trustme, ECDSA: milliseconds), in memory only."""
    global _material
    with _lock:
        if _material is None:
            import trustme

            ca = trustme.CA(organization_name="agy simulator")
            _material = ca, ca.issue_cert("127.0.0.1", "localhost", common_name="127.0.0.1")
        return _material


def server_context(alpn: list[str]) -> ssl.SSLContext:
    """The server's SSL context (as hypercorn builds one: TLS >= 1.2, no compression, ALPN), built once
    per process and ALPN list and shared by every simulator started in it: it is not changed once
    configured, and its certificate is the process's one leaf anyway."""
    key = tuple(alpn)
    with _lock:
        ctx = _contexts.get(key)
    if ctx is None:
        ctx = _server_context(list(key))
        with _lock:
            ctx = _contexts.setdefault(key, ctx)
    return ctx


def _server_context(alpn: list[str]) -> ssl.SSLContext:
    _ca, leaf = _ca_and_leaf()
    # (not create_default_context(CLIENT_AUTH): the same options, but it also loads the system's CA
    # certificates, ~40 ms of CPU, for client certificates this server never asks for)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.set_ciphers("ECDHE+AESGCM")
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_COMPRESSION
    ctx.set_alpn_protocols(alpn)
    leaf.configure_cert(ctx)  # via a temp file unlinked right after loading
    return ctx
