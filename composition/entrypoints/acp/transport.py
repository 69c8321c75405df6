"""The stdio transport of ``agy-harness acp``: newline-delimited JSON-RPC on fd 0/1, and nothing else on fd 1.

The SDK's own NDJSON transport drops a line that is not JSON with only a log line (the JSON-RPC 2.0
spec wants a ``-32700`` answer) and lets a message that is valid JSON but not an object (``[]``,
``42``) crash its receive loop. This transport, handed to the SDK's ``AgentSideConnection`` as its
message-level :class:`acp._transport.Transport` (``send``/``receive``/``close``), answers those
itself and passes on only well-formed JSON-RPC envelopes:

* not JSON -> ``-32700 Parse error`` (id null);
* JSON but not an object (a batch, a number) -> ``-32600 Invalid request`` (id null);
* an object with a wrong ``jsonrpc``, a non-string method, an id that is no string/integer, or
  neither a method nor a response shape -> ``-32600`` (with the id when it is usable);
* a line over the size limit -> ``-32600`` (the line is discarded up to its newline).

:func:`claim_stdout` moves fd 1 aside for the protocol and points fd 1 and ``sys.stdout`` at stderr,
so a stray ``print`` or a child process's output can never corrupt the protocol stream.

It also remembers the JSON-RPC ids of the requests the agent sends (``session/request_permission``,
``elicitation/create``), so a request agy made moot (a withdrawn gate) can be cancelled on the wire
with ACP's ``$/cancel_request``; and the ids of the client's running ``session/prompt`` requests, so
that a ``$/cancel_request`` the client sends for one cancels that prompt like ``session/cancel`` (the
SDK routes no ``$/cancel_request``). A notification the SDK does not route (a method ACP does not
have, or one this agent does not take) is dropped with a debug log line: a notification gets no
answer, and the SDK would print a traceback for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import stat
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from agy_harness.core import safejson

log = logging.getLogger("agy_harness.acp.transport")

MAX_LINE = 50 * 1024 * 1024  # the SDK's own default for stdio (multimodal prompts)
CANCEL_REQUEST = "$/cancel_request"
_TRACKED = ("session/request_permission", "elicitation/create")
ROUTED_NOTIFICATIONS = frozenset({"session/cancel"})  # and extensions ("_..."), which the SDK routes


def _error(id_: Any, code: int, message: str, details: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "error": {"code": code, "message": message, "data": {"details": details}},
    }


def _usable_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _watchable(fd: int) -> bool:
    """A pipe, a socket or a terminal: what the event loop can watch for input. Other character
    devices (``< /dev/null``) are refused by epoll (EPERM), and asyncio registers a read pipe only
    after ``connect_read_pipe`` returned: the refusal went to the loop's exception handler and the
    agent waited for good instead of ending at the end of its input."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def check_envelope(message: Any) -> dict[str, Any] | None:
    """The error to answer ``message`` with, or ``None`` when it is a well-formed JSON-RPC message."""
    if isinstance(message, list):
        return _error(None, -32600, "Invalid request", "batches are not supported")
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid request", "a JSON-RPC message is an object")
    id_ = message.get("id")
    reply_id = id_ if _usable_id(id_) else None
    if message.get("jsonrpc") != "2.0":
        return _error(reply_id, -32600, "Invalid request", 'jsonrpc must be "2.0"')
    if "id" in message and not _usable_id(id_):
        return _error(None, -32600, "Invalid request", "id must be a string, an integer or null")
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            return _error(reply_id, -32600, "Invalid request", "method must be a non-empty string")
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return _error(reply_id, -32602, "Invalid params", "params must be an object")
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return _error(reply_id, -32600, "Invalid request", "neither a request, a notification nor a response")


def claim_stdout() -> int:
    """Reserve the real stdout for the protocol; fd 1 and ``sys.stdout`` now go to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


class _PipeProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self._resume = asyncio.Event()
        self._resume.set()
        self.lost: BaseException | None = None

    def pause_writing(self) -> None:
        self._resume.clear()

    def resume_writing(self) -> None:
        self._resume.set()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = exc or ConnectionError("stdout closed")
        self._resume.set()

    async def drain(self) -> None:
        await self._resume.wait()
        if self.lost is not None:
            raise ConnectionError("the client closed our stdout") from self.lost


class StdioTransport:
    """JSON-RPC messages over newline-delimited JSON on two file descriptors."""

    def __init__(self, in_fd: int = 0, out_fd: int = 1, *, limit: int = MAX_LINE) -> None:
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._limit = limit
        self._reader: asyncio.StreamReader | None = None
        self._pipe: asyncio.WriteTransport | None = None
        self._protocol: _PipeProtocol | None = None
        self._lock = asyncio.Lock()
        self._outgoing: dict[tuple[str, str], int | str] = {}  # (sessionId, toolCallId) -> request id
        self._prompts: dict[int | str, str] = {}  # the client's running session/prompt id -> sessionId
        self.on_cancel_prompt: Callable[[str], Coroutine[Any, Any, None]] | None = None  # the agent's cancel
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    async def start(self) -> StdioTransport:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=self._limit)
        try:
            if not _watchable(self._in_fd):
                raise ValueError("not a pipe, a socket or a terminal")
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self._in_fd, "rb", buffering=0)
            )
        except (ValueError, OSError):  # a regular file, /dev/null: read it on a thread
            threading.Thread(target=self._feed, args=(loop, reader), daemon=True).start()
        self._reader = reader
        try:
            pipe, protocol = await loop.connect_write_pipe(
                _PipeProtocol, os.fdopen(self._out_fd, "wb", buffering=0)
            )
            self._pipe, self._protocol = pipe, protocol
        except (ValueError, OSError):
            self._pipe = None  # a regular file: plain blocking writes
        return self

    def _feed(self, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
        try:
            while chunk := os.read(self._in_fd, 65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    # -- the Transport protocol --------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        if message.get("method") in _TRACKED and "id" in message:
            params = message.get("params") or {}
            tool_call = params.get("toolCall") or {}
            key = (
                str(params.get("sessionId", "")),
                str(tool_call.get("toolCallId") or params.get("toolCallId") or ""),
            )
            self._outgoing[key] = message["id"]
        elif "method" not in message and ("result" in message or "error" in message):
            answered = message.get("id")
            if isinstance(answered, int | str):
                self._prompts.pop(answered, None)  # our answer to a prompt: it runs no more
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        async with self._lock:
            if self._pipe is not None and self._protocol is not None:
                if self._protocol.lost is not None:
                    raise ConnectionError("the client closed our stdout")
                self._pipe.write(data)
                await self._protocol.drain()
            else:
                await asyncio.to_thread(os.write, self._out_fd, data)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                message = safejson.loads(line)  # nested past the parser's limit: cut, not a crash
            except ValueError as exc:
                log.warning("not JSON (%s): answered -32700", exc)
                await self.send(_error(None, -32700, "Parse error", f"not JSON: {exc}"))
                continue
            problem = check_envelope(message)
            if problem is None:
                if "method" not in message:  # the client's reply to one of our requests: settled
                    self._settled(message.get("id"))
                elif "id" not in message and not self._routed(message):
                    continue
                elif message["method"] == "session/prompt" and isinstance(message.get("params"), dict):
                    self._prompts[message["id"]] = str(message["params"].get("sessionId", ""))
                return message  # type: ignore[no-any-return]
            log.warning("malformed JSON-RPC message: %s", problem["error"]["data"]["details"])
            if isinstance(message, dict) and "method" in message and "id" not in message:
                continue  # a notification never gets an answer
            await self.send(problem)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pipe is not None:
            with contextlib.suppress(Exception):
                self._pipe.close()

    # -- helpers -----------------------------------------------------------------------------

    async def _read_line(self) -> bytes | None:
        assert self._reader is not None
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            while True:  # discard the oversized message up to its newline
                try:
                    await self._reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as again:
                    await self._reader.readexactly(again.consumed)
                except asyncio.IncompleteReadError:
                    return None
            log.warning("a message over %d bytes: answered -32600", self._limit)
            await self.send(_error(None, -32600, "Invalid request", f"message over {self._limit} bytes"))
            return b""

    async def cancel_outgoing(self, session_id: str, tool_call_id: str) -> bool:
        """Send ``$/cancel_request`` for our pending request about ``tool_call_id``; False when none."""
        request_id = self._outgoing.pop((session_id, tool_call_id), None)
        if request_id is None:
            return False
        with contextlib.suppress(ConnectionError):
            await self.send({"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": request_id}})
        return True

    def _routed(self, message: dict[str, Any]) -> bool:
        """Whether the SDK takes this notification; ``$/cancel_request`` for a prompt is done here."""
        method = str(message["method"])
        if method in ROUTED_NOTIFICATIONS or method.startswith("_"):
            return True
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if method == CANCEL_REQUEST and _usable_id(request_id) and request_id in self._prompts:
            if self.on_cancel_prompt is not None:
                task = asyncio.create_task(self.on_cancel_prompt(self._prompts[request_id]))
                self._tasks.add(task)
                task.add_done_callback(functools.partial(self._cancel_done, request_id))
                log.info("$/cancel_request for prompt %r: cancelling it", request_id)
            return False
        log.debug(
            "notification %s not taken (%s): ignored",
            method,
            "no such request" if method == CANCEL_REQUEST else "not an ACP notification this agent takes",
        )
        return False

    def _cancel_done(self, request_id: Any, task: asyncio.Task[None]) -> None:
        """The end of a ``$/cancel_request``'s cancel, read here (a session closed meanwhile, agy gone):
        a logged outcome, never a task failure nobody reads."""
        self._tasks.discard(task)
        if task.cancelled():
            log.info("$/cancel_request for prompt %r: its cancel was itself cancelled", request_id)
        elif (exc := task.exception()) is not None:
            log.warning(
                "$/cancel_request for prompt %r: not cancelled (%s: %s)", request_id, type(exc).__name__, exc
            )

    def _settled(self, request_id: Any) -> None:
        for key, pending in list(self._outgoing.items()):
            if pending == request_id:
                del self._outgoing[key]
