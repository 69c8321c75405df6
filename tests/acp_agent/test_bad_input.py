"""Bad input to ``agy-harness acp`` gets JSON-RPC errors, never a crash; stdout carries only protocol.

These bytes are written raw on purpose: no client library sends malformed JSON-RPC.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
from typing import Any

from agy_harness.composition.entrypoints.acp.transport import MAX_LINE, StdioTransport

from .helpers import agy_harness_command

LINES: list[tuple[str, Any]] = [
    ("this is not json", (None, -32700)),
    ("[1, 2, 3]", (None, -32600)),
    ("42", (None, -32600)),
    ('{"jsonrpc": "1.0", "id": 1, "method": "initialize"}', (1, -32600)),
    ('{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize"}', (None, -32600)),
    ('{"jsonrpc": "2.0", "id": 2, "method": 7}', (2, -32600)),
    (
        '{"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}',
        (3, -32600),
    ),
    ('{"jsonrpc": "2.0", "id": 4, "method": "no/such/method", "params": {}}', (4, -32601)),
    ('{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {"clientInfo": {}}}', (5, -32602)),
    ('{"jsonrpc": "2.0", "id": 11, "method": "initialize", "params": "hello"}', (11, -32602)),
    ('{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nobody"}}', None),  # no answer
    # nested past the JSON parser's recursion limit (issue #20, case 5: this used to end the agent)
    ("[" * 100_000 + "]" * 100_000, (None, -32600)),
    (
        '{"jsonrpc": "2.0", "id": 12, "method": "session/new", "params": {"mcpServers": [], "cwd": '
        + "[" * 100_000
        + "]" * 100_000
        + "}}",
        (12, -32602),
    ),
    ('{"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {"protocolVersion": 1}}', (6, "ok")),
    (
        '{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": "nobody", "prompt": []}}',
        (7, -32002),  # a session that is not open: "resource not found"
    ),
    ('{"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": 5}}', (8, -32602)),
    ('{"jsonrpc": "2.0", "id": 9, "result": {}}', None),  # a response to nothing: ignored
    (
        '{"jsonrpc": "2.0", "id": 10, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}',
        (10, "ok"),
    ),
]


async def test_malformed_input_gets_errors_and_the_agent_lives_on() -> None:
    command = agy_harness_command()
    proc = await asyncio.create_subprocess_exec(
        *command,
        "acp",
        "--sim",
        "--sim-pace",
        "0",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        answers: dict[Any, dict[str, Any]] = {}
        unnamed: list[dict[str, Any]] = []
        for line, expected in LINES:
            proc.stdin.write(line.encode() + b"\n")
            await proc.stdin.drain()
            if expected is None:
                continue
            raw = await asyncio.wait_for(proc.stdout.readline(), 30)
            message = json.loads(raw)  # every stdout line is one JSON-RPC message
            assert message["jsonrpc"] == "2.0"
            if message["id"] is None:
                unnamed.append(message)
            else:
                answers[message["id"]] = message
        for _line, expected in LINES:
            if expected is None:
                continue
            id_, code = expected
            message = unnamed.pop(0) if id_ is None else answers[id_]
            if code == "ok":
                assert "result" in message, message
            else:
                assert message.get("error", {}).get("code") == code, (_line, message)
        assert answers[10]["result"]["sessionId"]
        assert proc.returncode is None  # still serving
    finally:
        proc.stdin.close()
        try:
            rc = await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            proc.kill()
            raise
        stderr = (await proc.stderr.read()).decode() if proc.stderr else ""
        sys.stderr.write(stderr[-3000:])
    assert rc == 0
    assert "Traceback" not in stderr


async def test_without_the_sdk_the_command_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['acp'] = None\n"
        "from agy_harness.composition.cli import main\n"
        "raise SystemExit(main(['acp', '--sim']))\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert out == b""
    assert err.decode().strip() == (
        "agy-harness acp: the ACP SDK is missing; in your agy-harness clone: pip install -e '.[acp]'"
    )  # the package is not on PyPI: 'agy-harness[acp]' installed nothing


async def test_on_a_terminal_it_says_what_it_is_for() -> None:
    """Started by a person on a terminal (stdin a tty): one stderr line says to start it from an editor;
    it serves all the same (an initialize on that terminal is answered on stdout)."""
    import pty

    leader, follower = pty.openpty()
    proc = await asyncio.create_subprocess_exec(
        *agy_harness_command(), "acp", "--sim",
        stdin=follower, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    os.close(follower)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        line = await asyncio.wait_for(proc.stderr.readline(), 60)
        assert line.decode().strip() == (
            "agy-harness acp speaks the Agent Client Protocol on stdio; start it from an editor"
        )
        os.write(
            leader, b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}\n'
        )
        answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
        assert answer["id"] == 1 and "result" in answer
    finally:
        proc.terminate()
        await proc.wait()
        os.close(leader)


SMALL_LINE = 4096  # the limit injected below, in place of the 50 MiB one

#: ``agy-harness acp --sim`` with its stdio transport built with ``limit=SMALL_LINE``
WITH_A_SMALL_LIMIT = f"""
from agy_harness.composition.entrypoints.acp import transport

class Small(transport.StdioTransport):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs, limit={SMALL_LINE})

transport.StdioTransport = Small
from agy_harness.composition.cli import main
raise SystemExit(main(["acp", "--sim", "--sim-pace", "0"]))
"""


def _initialize(id_: int, size: int) -> bytes:
    """A well-formed ``initialize`` request of exactly ``size`` bytes (padded with JSON whitespace)."""
    request = {"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": {"protocolVersion": 1}}
    head = json.dumps(request)[:-1]
    line = (head + " " * (size - len(head) - 1) + "}").encode()
    assert len(line) == size
    return line


async def test_a_line_over_the_limit_gets_32600_and_the_next_one_is_served() -> None:
    assert MAX_LINE == 50 * 1024 * 1024  # the README's number: the agent's transport by default
    assert inspect.signature(StdioTransport).parameters["limit"].default == MAX_LINE
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WITH_A_SMALL_LIMIT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    answers = []
    try:
        for line in (_initialize(1, SMALL_LINE + 1), _initialize(2, SMALL_LINE)):
            proc.stdin.write(line + b"\n")
            await proc.stdin.drain()
            async with asyncio.timeout(30):
                answers.append(json.loads(await proc.stdout.readline()))
        assert proc.returncode is None  # still serving
    finally:
        proc.stdin.close()  # the agent ends at end of input
        try:
            async with asyncio.timeout(15):
                _, stderr = await proc.communicate()
        except TimeoutError:
            proc.kill()
            raise
    over, within = answers
    assert over["id"] is None and over["error"]["code"] == -32600  # not read: its id is unknown
    assert over["error"]["data"]["details"] == f"message over {SMALL_LINE} bytes"
    assert within["id"] == 2 and "result" in within  # a line of exactly the limit is read
    assert proc.returncode == 0 and b"Traceback" not in stderr
