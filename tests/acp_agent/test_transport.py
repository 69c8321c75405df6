"""Our ACP stdio transport: a request about a tool call is tracked only until the client answers it."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
from typing import Any

from agy_harness.composition.entrypoints.acp.transport import StdioTransport


async def test_an_answered_permission_request_is_no_longer_tracked() -> None:
    client_in, our_out = os.pipe()
    our_in, client_out = os.pipe()
    transport = await StdioTransport(our_in, our_out).start()
    try:
        for n in (1, 2):
            params = {"sessionId": "s", "toolCall": {"toolCallId": f"call-{n}"}, "options": []}
            await transport.send(
                {"jsonrpc": "2.0", "id": n, "method": "session/request_permission", "params": params}
            )
        reply = {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
        }
        os.write(client_out, (json.dumps(reply) + "\n").encode())
        assert await transport.receive() == reply
        # the answered one is gone (nothing to cancel); the pending one can still be cancelled
        assert await transport.cancel_outgoing("s", "call-1") is False
        assert await transport.cancel_outgoing("s", "call-2") is True
    finally:
        await transport.close()
        for fd in (client_in, client_out):
            os.close(fd)


async def test_a_cancel_request_whose_cancel_fails_is_logged_and_read(caplog: Any) -> None:
    """``$/cancel_request`` for a running prompt whose cancel fails (its session closed meanwhile):
    the failure is read and logged, not left to asyncio as "Task exception was never retrieved", and
    the transport goes on reading."""
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    client_in, our_out = os.pipe()
    our_in, client_out = os.pipe()
    transport = await StdioTransport(our_in, our_out).start()
    cancelled: list[str] = []

    async def failing_cancel(session_id: str) -> None:
        cancelled.append(session_id)
        raise RuntimeError("the session was closed")

    transport.on_cancel_prompt = failing_cancel
    try:
        prompt = {"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": "s"}}
        cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}}
        later = {"jsonrpc": "2.0", "id": 8, "method": "session/list", "params": {}}
        for message in (prompt, cancel, later):
            os.write(client_out, (json.dumps(message) + "\n").encode())
        assert await transport.receive() == prompt
        with caplog.at_level(logging.INFO, logger="agy_harness.acp.transport"):
            assert await transport.receive() == later  # the reader goes on
            while transport._tasks or not cancelled:  # the cancel ran, and its end was handed on
                await asyncio.sleep(0)
        assert cancelled == ["s"]
        assert "prompt 7: not cancelled (RuntimeError: the session was closed)" in caplog.text
        gc.collect()  # a task nobody read reports itself when it is collected
        await asyncio.sleep(0)
        assert not [c for c in unhandled if "never retrieved" in str(c.get("message"))]
    finally:
        loop.set_exception_handler(None)
        await transport.close()
        for fd in (client_in, client_out):
            os.close(fd)


async def test_stdin_at_dev_null_is_an_end_not_a_hang() -> None:
    """``agy-harness acp < /dev/null`` (a script, a service with no input): a character device epoll
    refuses. asyncio registered it only after ``connect_read_pipe`` had returned, so the refusal
    (EPERM) went to the loop's exception handler and nothing was ever read: the agent waited for good
    instead of ending at the end of its input. Read on a thread like a regular file, it ends."""
    our_in = os.open(os.devnull, os.O_RDONLY)
    client_in, our_out = os.pipe()
    transport = await StdioTransport(our_in, our_out).start()
    try:
        async with asyncio.timeout(30):  # a bound for a hang, not a speed measure
            assert await transport.receive() is None  # the end of the input
    finally:
        await transport.close()
        for fd in (client_in, our_in):
            os.close(fd)
