"""A tiny scriptable connect server (hypercorn, TLS, HTTP/2) for transport-level tests."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme
from hypercorn.asyncio.run import worker_serve
from hypercorn.config import Config
from hypercorn.utils import wrap_app


@dataclass
class Request:
    method: str
    headers: dict[str, str]
    body: bytes
    http_version: str


@dataclass
class Reply:
    status: int = 200
    body: bytes | AsyncIterator[bytes] = b"{}"
    content_type: str = "application/json"


Handler = Callable[[Request], Awaitable[Reply]]


def const(status: int, body: bytes, content_type: str = "application/json") -> Handler:
    async def handler(_req: Request) -> Reply:
        return Reply(status, body, content_type)

    return handler


@dataclass
class StubServer:
    routes: dict[str, Handler] = field(default_factory=dict)
    tls: bool = True
    requests: list[Request] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        req = Request(
            scope["path"].rsplit("/", 1)[-1],
            {k.decode().lower(): v.decode() for k, v in scope["headers"]},
            body,
            scope["http_version"],
        )
        self.requests.append(req)
        handler = self.routes.get(req.method, const(404, b'{"code":"unimplemented","message":"nope"}'))
        reply = await handler(req)
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(b"content-type", reply.content_type.encode())],
            }
        )
        if isinstance(reply.body, bytes):
            await send({"type": "http.response.body", "body": reply.body})
            return
        async for chunk in reply.body:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[StubServer]:
        with tempfile.TemporaryDirectory() as tmp:
            config = Config()
            config.bind = ["127.0.0.1:0"]
            config.accesslog = None
            config.graceful_timeout = 0.2
            if self.tls:
                ca = trustme.CA()
                cert = ca.issue_cert("127.0.0.1", "localhost")
                cert.private_key_pem.write_to_path(Path(tmp) / "key.pem")
                cert.cert_chain_pems[0].write_to_path(Path(tmp) / "cert.pem")
                config.certfile = str(Path(tmp) / "cert.pem")
                config.keyfile = str(Path(tmp) / "key.pem")
            sockets = config.create_sockets()
            listening = sockets.secure_sockets if self.tls else sockets.insecure_sockets
            self.port = listening[0].getsockname()[1]
            stop = asyncio.Event()
            task = asyncio.create_task(
                worker_serve(
                    wrap_app(self._app, config.wsgi_max_body_size, "asgi"),  # type: ignore[arg-type]
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
    raise RuntimeError(f"stub server on {port} never listened")
