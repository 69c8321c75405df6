"""``agy-harness record [--port N | --cascade ID] --out FILE [--redact] [--seconds S]``.

Captures a live conversation as agy shows it: a ``GetCascadeTrajectorySteps`` snapshot
(``{"steps": [...]}``), then every ``StreamAgentStateUpdates`` data frame verbatim (``{"update": ...}``),
then a closing snapshot, one JSON object per line. ``agy-harness replay FILE`` reads it (the same
events as the live session), and ``agy-harness sim --recording FILE`` serves it, so a real recording
can become a fixture. ``--redact`` replaces every text a human or the model wrote (turns, replies,
thinking, commands, outputs, questions, answers, tool arguments) with ``<redacted N chars>``, keeping
ids, types, statuses, indices and timestamps. It only reads: nothing is sent to agy but reads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from agy_harness.adapters.rpc.actions import RpcCascadeDirectory
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.discovery import Resolver
from agy_harness.core.steps import as_list

from .container import latest_cascade
from .errors import EXIT_OK

#: Keys whose string values are what someone wrote (redacted with --redact).
TEXT_KEYS = frozenset(
    {
        "text", "userResponse", "response", "modifiedResponse", "thinking", "full", "commandLine",
        "proposedCommandLine", "question", "writeInResponse", "message", "argumentsJson", "result",
        "markdown", "userIntent", "userRequests", "target", "actionDescription", "toolSummary",
        "toolAction", "suggestedPersistPattern", "cwd", "content", "diff", "codeContent", "title",
        "Prompt", "Role", "CommandLine", "Cwd", "AbsolutePath", "DirectoryPath", "name",
    }
)  # fmt: skip
_KEEP = frozenset({"type", "status", "model", "messageId", "id", "originalName"})


def redact(value: Any, key: str = "") -> Any:
    """``value`` with every written text replaced by ``<redacted N chars>`` (structure kept)."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if isinstance(value, str) and key in TEXT_KEYS and key not in _KEEP and value:
        return f"<redacted {len(value)} chars>"
    return value


def _line(obj: dict[str, Any], redacting: bool) -> str:
    return json.dumps(redact(obj) if redacting else obj, ensure_ascii=False, separators=(",", ":")) + "\n"


async def record(
    client: RpcClient, cascade_id: str, out: TextIO, *, redacting: bool = False, stop: asyncio.Event
) -> int:
    """Write the recording of ``cascade_id`` to ``out`` until ``stop`` is set; returns the frames seen."""
    snapshot = await client.call("GetCascadeTrajectorySteps", {"cascadeId": cascade_id})
    out.write(_line({"steps": as_list(snapshot.get("steps"))}, redacting))
    frames = 0
    stream = client.stream("StreamAgentStateUpdates", {"conversationId": cascade_id})

    async def pump() -> None:
        nonlocal frames
        async with contextlib.aclosing(stream):
            async for frame in stream:
                if frame.payload is not None:
                    out.write(_line(frame.payload, redacting))
                    out.flush()
                    frames += 1

    task = asyncio.create_task(pump())
    waiter = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (task, waiter):
            t.cancel()
        await asyncio.gather(task, waiter, return_exceptions=True)
    closing = await client.call("GetCascadeTrajectorySteps", {"cascadeId": cascade_id})
    out.write(_line({"steps": as_list(closing.get("steps"))}, redacting))
    out.flush()
    return frames


async def _run(args: argparse.Namespace) -> int:
    binding = await Resolver(args.cascade, port=args.port).resolve()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    if args.seconds is not None:
        loop.call_later(args.seconds, stop.set)
    async with RpcClient(binding.base_url, csrf_token=binding.csrf_token) as client:
        cascade = args.cascade or await latest_cascade(RpcCascadeDirectory(client))
        with open(Path(args.out), "w", encoding="utf-8") as out:
            print(f"agy-harness record: conversation {cascade} -> {args.out} (Ctrl-C stops)", file=sys.stderr)
            try:
                frames = await record(client, cascade, out, redacting=args.redact, stop=stop)
            except asyncio.CancelledError:
                raise
    print(f"agy-harness record: {frames} frame(s) written", file=sys.stderr)
    return EXIT_OK


def run_record(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:  # Ctrl-C is how a recording ends (a failure is cli.main's one line)
        return EXIT_OK


def add_record_command(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="capture a live conversation's stream frames and snapshots to a JSONL file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--port", type=int, default=None, help="agy's RPC port (still verified)")
    where.add_argument("--cascade", default=None, help="the conversation (default: agy's most recent)")
    p.add_argument("--out", required=True, help="the JSONL file to write")
    p.add_argument("--redact", action="store_true", help="replace every written text with <redacted N chars>")
    p.add_argument("--seconds", type=float, default=None, help="stop after this long (default: Ctrl-C)")
    p.set_defaults(handler=run_record)
