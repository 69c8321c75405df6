"""aiohttp, imported without loading the system's CA certificates into two TLS contexts it builds at its
import and this package never uses (the RPC client gives every connection its own context,
:mod:`.connections`): they load when one of them is first used for a connection, never before.

aiohttp 3.10+ builds its default client contexts, ``_SSL_CONTEXT_VERIFIED`` (``ssl.create_default_
context()``) and ``_SSL_CONTEXT_UNVERIFIED`` (``set_default_verify_paths()``), at the import of
``aiohttp.connector``, "since they do blocking I/O to load certificates from disk" (its comment; the
choice: aio-libs/aiohttp pull request 9029; read in aiohttp 3.14's ``connector.py``: primary evidence,
the installed source). Each parses the whole CA bundle (~140 certificates here): ~60 ms of CPU at the
start of every command that reaches agy, for contexts only a request without an ``ssl=`` of its own
would use.

Here a context's CA loads are recorded instead of done, only while ``aiohttp`` is first imported and
only in the thread importing it (any other thread's contexts, and subclasses, load as usual), and the
context becomes a :class:`DeferredCA` (the same object): the recorded loads run, once, before it first
wraps a socket or a memory BIO (what asyncio's TLS uses), so a request that uses aiohttp's defaults
verifies exactly as before. Nothing changes when ``aiohttp.connector`` was already imported.
"""

from __future__ import annotations

import importlib
import ssl
import sys
import threading
from typing import Any

#: the SSLContext methods that load CA certificates, deferred while aiohttp is first imported
DEFERRED = ("load_default_certs", "set_default_verify_paths")

_LOCK = threading.Lock()
_PENDING = "_agy_harness_pending_loads"


class DeferredCA(ssl.SSLContext):
    """An SSLContext whose CA loads recorded at aiohttp's import run before it first wraps anything."""

    def _load_pending(self) -> None:
        with _LOCK:
            pending = self.__dict__.pop(_PENDING, [])
            for name, args in pending:
                getattr(ssl.SSLContext, name)(self, *args)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load_pending()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load_pending()
        return super().wrap_bio(*args, **kwargs)


def _import_deferring_ca_loads() -> None:
    if "aiohttp.connector" in sys.modules:
        return
    thread = threading.get_ident()
    real = {name: getattr(ssl.SSLContext, name) for name in DEFERRED}

    def deferring(name: str) -> Any:
        def load(self: ssl.SSLContext, *args: Any) -> None:
            if threading.get_ident() != thread or type(self) not in (ssl.SSLContext, DeferredCA):
                real[name](self, *args)  # (another thread's, or a subclass: as usual)
                return
            self.__dict__.setdefault(_PENDING, []).append((name, args))
            self.__class__ = DeferredCA  # (the same object, its loads pending until it is used)

        return load

    for name in DEFERRED:
        setattr(ssl.SSLContext, name, deferring(name))
    try:
        importlib.import_module("aiohttp.connector")
    finally:
        for name, method in real.items():
            setattr(ssl.SSLContext, name, method)


_import_deferring_ca_loads()

import aiohttp as aiohttp  # noqa: E402

__all__ = ["DEFERRED", "DeferredCA", "aiohttp"]
