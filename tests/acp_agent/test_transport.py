"""Our ACP stdio transport: a request about a tool call is tracked only until the client answers it."""

from __future__ import annotations

import json
import os

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
