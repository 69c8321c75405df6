"""``agy-harness record``: capture a live conversation as JSONL (for ``replay`` and ``sim --recording``).

The file holds a ``GetCascadeTrajectorySteps`` snapshot (``{"steps": [...]}``), then every
``StreamAgentStateUpdates`` data frame verbatim (``{"update": ...}``), then a closing snapshot, one
JSON object per line. ``--redact`` replaces every text a human or the model wrote with
``<redacted N chars>``, keeping ids, types, statuses, indices and timestamps. It only reads agy.
Ctrl-C (or SIGTERM) ends a recording cleanly: the closing snapshot and the summary line are still
written, then it exits 130 (143). The summary's ``scopes:`` line is doctor's
(:mod:`agy_harness.core.scope_route`, read from the closing snapshot).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agy_harness.ports.errors import AgyAmbiguous

from .cli_args import FILE, SECONDS, add_cascade, add_port, command, positive
from .errors import EXIT_OK, BadInput
from .fit import say

if TYPE_CHECKING:
    from agy_harness.adapters.rpc.client import RpcClient
    from agy_harness.core.scope_route import ScopeRoute

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


@dataclass(frozen=True)
class Recorded:
    """What a recording saw: the stream frames written, and which route agy honours for a lasting
    grant (read from the closing snapshot, as ``doctor`` reads the conversation's steps)."""

    frames: int
    route: ScopeRoute


async def record(
    client: RpcClient,
    cascade_id: str,
    out: TextIO,
    *,
    redacting: bool = False,
    stop: asyncio.Event,
    progress: Callable[[int], None] = lambda _frames: None,
    seconds: float | None = None,
) -> Recorded:
    """Write the recording of ``cascade_id`` to ``out`` until ``stop`` is set (or for ``seconds`` from
    the opening snapshot on); returns the frames seen and the scope route the closing snapshot shows
    (``progress`` is told the count after each frame)."""
    from agy_harness.core.scope_route import scope_route
    from agy_harness.core.steps import as_list

    snapshot = await client.call("GetCascadeTrajectorySteps", {"cascadeId": cascade_id})
    out.write(_line({"steps": as_list(snapshot.get("steps"))}, redacting))
    if seconds is not None:  # the recording's own time: not the imports, the discovery, the first call
        asyncio.get_running_loop().call_later(seconds, stop.set)
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
                    progress(frames)

    task = asyncio.create_task(pump())
    waiter = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (task, waiter):
            t.cancel()
        await asyncio.gather(task, waiter, return_exceptions=True)
    closing = await client.call("GetCascadeTrajectorySteps", {"cascadeId": cascade_id})
    steps = as_list(closing.get("steps"))
    out.write(_line({"steps": steps}, redacting))
    out.flush()
    return Recorded(frames, scope_route(steps, cascade_id))


class Progress:
    """``recording · 12 frames · 8 s`` on stderr, redrawn in place on a terminal (nothing elsewhere)."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.live = err.isatty()
        self.start = asyncio.get_running_loop().time()
        self.frames = 0

    def __call__(self, frames: int) -> None:
        self.frames = frames
        self.draw()

    def draw(self) -> None:
        if self.live:
            took = asyncio.get_running_loop().time() - self.start
            self.err.write(f"\r\x1b[2K  recording · {self.frames} frame(s) · {took:.0f} s")
            self.err.flush()

    def clear(self) -> None:
        if self.live:
            self.err.write("\r\x1b[2K")
            self.err.flush()


def _writable(out: str, force: bool = False) -> None:
    """``--out``'s file can be written (checked before agy is looked for): else bad input, said once.
    A file that exists is another recording, perhaps: replaced only with ``--force``."""
    if out == "-":
        return
    path = Path(out)
    if path.is_file() and not force:
        raise BadInput(f"--out {out}: the file exists; name another file, or add --force to replace it")
    if path.is_dir():
        raise BadInput(f"--out {out}: a directory; name a file in it, e.g. --out {path / 'session.jsonl'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"--out {out}: there is no directory {parent}; create it or name a file elsewhere")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise BadInput(f"--out {out}: not writable by you; name a file in a directory of yours")


def _private(out: str, force: bool = False) -> TextIO:
    """``--out`` for writing: a file it makes is 0600 (a recording holds the whole conversation, the
    commands' output too); a file that exists keeps the mode its owner gave it. Without ``force`` a
    regular file is only made, never replaced (one made since :func:`_writable` looked is refused)."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    if force:
        flags |= os.O_TRUNC
    elif not Path(out).exists():
        flags |= os.O_EXCL  # (a device such as /dev/null is written as it is)
    try:
        fd = os.open(out, flags, 0o600)
    except FileExistsError:
        raise BadInput(
            f"--out {out}: the file exists; name another file, or add --force to replace it"
        ) from None
    return os.fdopen(fd, "w", encoding="utf-8")


async def _run(args: argparse.Namespace) -> int:
    from ..root.container import bind_endpoint, latest_cascade, make_container

    _writable(args.out, args.force)

    container = make_container(port=args.port, cascade_id=args.cascade)
    try:
        await bind_endpoint(container, version=False)  # discovery (the port is verified); no version needed
    except AgyAmbiguous as exc:  # which is which: picked on a terminal (.picker), else refused with the list
        from .picker import pick_port

        container = make_container(port=await pick_port(exc, "record"), cascade_id=args.cascade)
        await bind_endpoint(container, version=False)
    stop = asyncio.Event()
    stopped_by: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: int) -> None:  # Ctrl-C ends the recording; it is not an error
        stopped_by.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)
    async with container.client() as client:
        cascade = args.cascade or await latest_cascade(container.directory())
        to_stdout = args.out == "-"
        where = "stdout" if to_stdout else args.out
        out = sys.stdout if to_stdout else _private(args.out, args.force)
        try:
            until = f"for {args.seconds:g} s" if args.seconds is not None else "until Ctrl-C"
            say(f"agy-harness record: conversation {cascade} -> {where}, {until}", sys.stderr)
            progress = Progress(sys.stderr)
            ticker = loop.create_task(_tick(progress))
            try:
                recorded = await record(
                    client,
                    cascade,
                    out,
                    redacting=args.redact,
                    stop=stop,
                    progress=progress,
                    seconds=args.seconds,
                )
            finally:
                ticker.cancel()
                progress.clear()
        finally:
            if not to_stdout:
                out.close()
    say(f"agy-harness record: {recorded.frames} frame(s) and 2 snapshots written to {where}", sys.stderr)
    route = recorded.route.text(redacting=args.redact)  # as doctor says it (--redact: no pattern)
    say(f"agy-harness record: scopes: {route}", sys.stderr)  # fitted to the terminal
    from agy_harness.composition.root.audit_ledger import kind_tally
    from agy_harness.core.kind_tally import tally_lines

    for line in tally_lines(kind_tally(conversation=cascade)):  # this conversation's, from the ledger
        say(f"agy-harness record: {line}", sys.stderr)
    return 128 + stopped_by[0] if stopped_by else EXIT_OK


async def _tick(progress: Progress) -> None:
    while True:
        await asyncio.sleep(1.0)
        progress.draw()


def run_record(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))  # Ctrl-C is handled inside (a clean end, exit 130)


DESCRIPTION = """\
Capture a live agy conversation as JSONL, for `agy-harness replay` and `agy-harness sim --recording`:
a snapshot of its steps, then every stream frame as agy sent it, then a closing snapshot, one JSON
object per line. It only reads agy. --redact replaces every text a person or the model wrote with
<redacted N chars>, keeping ids, types, statuses and timestamps. Ctrl-C ends the recording cleanly:
the closing snapshot and the summary are still written, then it exits 130. The summary says which
route this agy honours for a lasting grant, as `agy-harness doctor` does ("agy did not keep the
grant" where agy asked again for a request a grant covered)."""

EPILOG = """\
examples:
  agy-harness record --out session.jsonl                 agy's most recent conversation, until Ctrl-C
  agy-harness record --cascade ID --seconds 60 --redact --out bug.jsonl
                                                         one minute, without anyone's text
  agy-harness sim --recording session.jsonl              serve it again (or: agy-harness replay it)"""


def add_record_command(sub: Any) -> None:
    p = command(
        sub,
        "record",
        summary="capture a live conversation's stream frames and snapshots to a JSONL file",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    where = p.add_mutually_exclusive_group()
    add_port(where)
    add_cascade(where)
    p.add_argument(
        "--out",
        required=True,
        metavar=FILE,
        help="the JSONL file to write (- : stdout); an existing one is refused",
    )
    p.add_argument(
        "--force", action="store_true", help="replace --out's file when it exists (default: refused)"
    )
    p.add_argument(
        "--redact",
        action="store_true",
        help="replace every written text with <redacted N chars> (default: kept)",
    )
    p.add_argument(
        "--seconds",
        type=positive,
        default=None,
        metavar=SECONDS,
        help="stop after this long (default: at Ctrl-C)",
    )
    p.set_defaults(handler=run_record)
