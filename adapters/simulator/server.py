"""The simulator's HTTP side: a small hand-written ASGI app served by hypercorn in the caller's loop.

One hypercorn worker serves two pre-bound loopback sockets: the TLS one (ALPN h2 + http/1.1) carrying
``exa.language_server_pb.LanguageServerService``, and a plain-HTTP one that answers 404 to everything
(as agy's second listener does, so port discovery has to pick the right one).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from hypercorn.asyncio.statsd import StatsdLogger
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.utils import wrap_app

from agy_harness.ports.tasks import reap

from . import envelope
from .faults import with_drift
from .profiles import ALL_METHODS, SERVICE
from .state import Cascade, RpcFailure, ServerHost, Watcher
from .tls import server_context

__all__ = ["App", "Listener", "RpcFailure"]

log = logging.getLogger("agy_harness.simulator.server")

PREFIX = f"/{SERVICE}/"
STREAM_METHODS = frozenset({"StreamAgentStateUpdates", "StreamCascadeReactiveUpdates"})
NOT_FOUND = b"404 page not found\n"

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


_FAULT_CODES = {500: "internal", 503: "unavailable", 502: "unavailable", 429: "resource_exhausted"}


async def _respond(send: Send, status: int, body: bytes, content_type: str = "application/json") -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _error(send: Send, status: int, code: str, message: str) -> None:
    await _respond(send, status, json.dumps({"code": code, "message": message}).encode())


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionError("client went away")
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


class App:
    """The ASGI application (one per Simulator; survives restarts)."""

    def __init__(self, sim: ServerHost) -> None:
        self.sim = sim

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self._http(scope, receive, tracked)
        except ConnectionError:
            return
        except Exception:
            log.exception("simulator request failed")
            if started:
                with contextlib.suppress(Exception):
                    error = {"code": "internal", "message": "simulator error"}
                    await send(
                        {"type": "http.response.body", "body": envelope.end_stream(error), "more_body": False}
                    )
            else:
                await _error(send, 500, "internal", "simulator error")

    async def _http(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if scope.get("scheme") != "https" or not path.startswith(PREFIX):
            await _read_body(receive)
            await _respond(send, 404, NOT_FOUND, "text/plain; charset=utf-8")
            return
        method = path[len(PREFIX) :]
        sim = self.sim
        body = await _read_body(receive)
        if method not in ALL_METHODS or not sim.profile.serves(method):
            await _respond(send, 404, NOT_FOUND, "text/plain; charset=utf-8")
            return
        if scope["method"] != "POST":
            await _error(send, 405, "unimplemented", f"{scope['method']} is not supported")
            return
        sim.calls.append(method)
        log.debug("served %s", method)  # with -vv: what agy received, for whoever watches from outside
        failure = sim.faults.take_failure(method)
        if failure is not None:
            await _error(send, failure.status, _FAULT_CODES.get(failure.status, "unknown"), failure.message)
            return
        stale = sim.faults.take_stale_listing() if method == "GetAllCascadeTrajectories" else None
        if stale is not None:
            await asyncio.sleep(stale[1])
            await _respond(send, 200, json.dumps(stale[0], ensure_ascii=False).encode())
            return
        delay = sim.faults.delay_for(method)
        if delay:
            await asyncio.sleep(delay)
        content_type = dict(scope["headers"]).get(b"content-type", b"").decode().split(";")[0].strip().lower()
        if method in STREAM_METHODS and content_type == "application/connect+json":
            await self._stream(method, body, receive, send)
            return
        if content_type != "application/json":
            await _respond(send, 415, b"", "text/plain")
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError as exc:
            await _error(send, 400, "invalid_argument", f"unmarshal into request: {exc}")
            return
        if not isinstance(request, dict):
            await _error(send, 400, "invalid_argument", "unmarshal into request: not a JSON object")
            return
        try:
            answer = await sim._rpc(method, request)
        except RpcFailure as exc:
            await _error(send, exc.status, exc.code, exc.message)
            return
        await _respond(send, 200, json.dumps(answer, ensure_ascii=False).encode())

    # -- server streams ------------------------------------------------------------------------
    async def _stream(self, method: str, body: bytes, receive: Receive, send: Send) -> None:
        sim = self.sim
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/connect+json")],
            }
        )

        async def finish(error: dict[str, str] | None = None) -> None:
            await send({"type": "http.response.body", "body": envelope.end_stream(error), "more_body": False})

        if method == "StreamCascadeReactiveUpdates":
            await finish({"code": "unknown", "message": "reactive state is deprecated"})
            return
        try:
            request = envelope.decode_request(body)
        except envelope.EnvelopeError as exc:
            await finish({"code": "invalid_argument", "message": str(exc)})
            return
        cascade = sim._cascades.get(str(request.get("conversationId") or ""))
        if cascade is None:
            await finish({"code": "unknown", "message": "trajectory not found"})
            return
        watcher = sim._watch(cascade)
        gone = asyncio.ensure_future(receive())
        try:
            await self._pump(cascade, watcher, gone, send)
        finally:
            sim._unwatch(cascade, watcher)
            gone.cancel()
            await reap(gone)

    async def _pump(self, cascade: Cascade, watcher: Watcher, gone: asyncio.Future[Any], send: Send) -> None:
        sim = self.sim
        faults = sim.faults

        async def body(data: bytes, more: bool = True) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": more})

        async def wait_for_change() -> bool:
            """False when the client went away."""
            waiter = asyncio.ensure_future(watcher.event.wait())
            try:
                await asyncio.wait({waiter, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
            return not gone.done()

        indices: list[int] = []
        first = True
        while True:
            # stall: hold everything (no frames, no trailer) until the switch is cleared or we stop
            while faults.stall_stream and watcher.closed is None:
                await asyncio.wait({gone}, timeout=0.02)  # polls the switch (a plain dataclass field)
                if gone.done():
                    return
            if watcher.closed is not None:
                if watcher.closed == "trailer" and not faults.stall_stream:
                    await body(envelope.end_stream(), more=False)
                else:
                    await body(b"", more=False)  # ends without a trailer (a dying server)
                return
            if first:  # the replay: every step as it is now
                indices = list(range(len(cascade.steps)))
                watcher.dirty.clear()
            if first or indices or watcher.status_dirty:
                watcher.status_dirty = False
                frame = sim._update_frame(cascade, indices)
                if faults.drift:
                    update = with_drift(frame["update"], "frame")
                    steps_update = update["mainTrajectoryUpdate"]["stepsUpdate"]  # type: ignore[index]
                    steps_update["steps"] = [with_drift(x, "step") for x in steps_update["steps"]]
                    frame = {"update": update}
                if faults.take("non_dict_step"):
                    frame["update"]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"].append("not a step")
                data = envelope.encode(frame)  # now: the frame shares the steps' values
                delay = faults.delay_for("StreamAgentStateUpdates")
                if delay:
                    await asyncio.sleep(delay)
                if faults.take("malformed_frame"):
                    await body(envelope.encode_raw(b'{"update": {"conversationId": oops'))
                if faults.take("cut_stream"):
                    await body(data[: max(1, len(data) // 2)], more=False)
                    return
                await body(data)
                first = False
                indices = []
            watcher.event.clear()
            if watcher.dirty or watcher.status_dirty or watcher.closed is not None:
                pass
            elif not await wait_for_change():
                return
            indices = sorted(watcher.dirty)
            watcher.dirty.clear()


class Listener:
    """Both sockets + hypercorn's connection handler serving them. ``bind`` takes fresh ephemeral
    ports; ``stop`` ends every connection (aborting the ones that do not close promptly), so nothing
    is left running."""

    def __init__(self, app: App, host: str = "127.0.0.1") -> None:
        self.app = app
        self.host = host
        self.port = 0
        self.plain_port = 0
        self._servers: list[asyncio.Server] = []
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._context: WorkerContext | None = None

    @staticmethod
    def _socket(host: str) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, 0))
        sock.listen(128)
        sock.setblocking(False)
        return sock

    def bind(self) -> None:
        self._secure = self._socket(self.host)
        self._plain = self._socket(self.host)
        self.port = self._secure.getsockname()[1]
        self.plain_port = self._plain.getsockname()[1]

    async def start(self) -> None:
        config = Config()
        config.alpn_protocols = ["h2", "http/1.1"]
        config.keep_alive_timeout = 30.0
        config.accesslog = None
        config.errorlog = logging.getLogger("agy_harness.simulator.hypercorn")
        config.h2_max_concurrent_streams = 256
        config.set_statsd_logger_class(StatsdLogger)
        app = wrap_app(self.app, config.wsgi_max_body_size, "asgi")  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        context = self._context = WorkerContext(None)
        state: dict[str, Any] = {}

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._connections[task] = writer
            try:
                await TCPServer(app, loop, config, context, state, reader, writer)
            except asyncio.CancelledError:
                pass  # stop() ended this connection; end quietly (asyncio logs a cancelled callback task)
            finally:
                self._connections.pop(task, None)

        self._servers = [
            await asyncio.start_server(
                connected,
                sock=self._secure,
                ssl=server_context(config.alpn_protocols),  # no key file left on disk
                ssl_handshake_timeout=5.0,
                ssl_shutdown_timeout=0.5,
            ),
            await asyncio.start_server(connected, sock=self._plain),
        ]

    async def stop(self, grace: float = 0.5) -> None:
        if self._context is not None:
            await self._context.terminated.set()
        for server in self._servers:
            server.close()
        tasks = list(self._connections)
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        for task, writer in list(self._connections.items()):
            writer.transport.abort()
            task.cancel()
        await reap(*tasks)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers = []
        for sock in (self._secure, self._plain):
            with contextlib.suppress(OSError):
                sock.close()
