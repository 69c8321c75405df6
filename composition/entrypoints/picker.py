"""Which agy, asked on a terminal: when more than one answers, ``attach`` and ``record`` offer the
candidates as a numbered list (port, process, directory, conversation title) and go on with the one
picked, as if it had been given with ``--port``.

Only where a person can answer: stdin and stdout both a terminal. Elsewhere (a pipe, an editor, CI) the
refusal stands (:func:`.candidates.refusal`: a line per candidate and the ``--port`` line, exit 1).
At the question: a listed number (or a listed port) and Enter picks it; anything else is said in one
line and asked again (a typo costs a retype, not the whole command); Enter on an empty line or Ctrl-D
picks none: one line naming the ``--port`` line, exit 1 (as the refusal); Ctrl-C exits 130.

The line is read in the terminal's own line editing (canonical mode: echo, Backspace), one
``os.read`` of file descriptor 0 per question (bounded; nothing past the line is taken from
the keyboard that the command reads next), in a daemon thread (Ctrl-C never waits for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading

from agy_harness.adapters.sinks.line_editor import is_terminal
from agy_harness.ports.errors import AgyAmbiguous

from .candidates import describe, refusal
from .errors import UserFacingError

LINE_BYTES = 4096  # a terminal's canonical line is at most this long (Linux's N_TTY_BUF_SIZE)


def can_ask() -> bool:
    """A person can answer here: stdin and stdout are both a terminal."""
    return is_terminal(0) and is_terminal(1)


async def pick_port(exc: AgyAmbiguous, command: str) -> int:
    """The port the user picks among ``exc.ports``; raises the refusal where nobody can be asked (or
    nothing can be listed), and a one-line :class:`UserFacingError` when the user picks none."""
    ports = list(exc.ports)
    if len(ports) < 2 or not can_ask():
        raise await refusal(exc, command)
    lines = await describe(ports)
    _say(f"more than one agy answers; which one should {command} use?")
    for number, line in enumerate(lines, 1):
        _say(f"  {number}) {line}")
    question = f"pick 1-{len(ports)} and Enter (Enter alone: none, Ctrl-C quits): "
    while True:
        answer = await _read_line(question)
        if answer is None or not answer.strip():
            raise UserFacingError(
                f"no agy picked; name one with --port, e.g. agy-harness {command} --port {ports[0]}"
            ) from exc
        port = chosen(answer, ports)
        if port is not None:
            _say(f"{command}: port {port} (next time: agy-harness {command} --port {port})")
            return port
        _say(f"{' '.join(answer.split())[:20]!r} is not one of 1-{len(ports)}")


def chosen(answer: str, ports: list[int]) -> int | None:
    """The port ``answer`` names: its number in the list (1-based), or a listed port itself."""
    text = answer.strip()
    if not text.isdecimal() or len(text) > 6:
        return None
    value = int(text)
    if 1 <= value <= len(ports):
        return ports[value - 1]
    return value if value in ports else None


def _say(line: str) -> None:
    print(line, file=sys.stdout, flush=True)


async def _read_line(prompt: str) -> str | None:
    """One line typed at ``prompt``; None at end of input (Ctrl-D on an empty line)."""
    sys.stdout.write(prompt)
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bytes] = loop.create_future()

    def settle(data: bytes) -> None:
        if not future.done():
            future.set_result(data)

    def run() -> None:
        try:
            data = os.read(0, LINE_BYTES)
        except OSError:
            data = b""
        with contextlib.suppress(RuntimeError):  # the loop is gone: the process is ending
            loop.call_soon_threadsafe(settle, data)

    threading.Thread(target=run, name="picker", daemon=True).start()
    data = await future
    if not data.endswith(b"\n"):  # Ctrl-D: the cursor is still on the question's line
        _say("")
    return data.decode("utf-8", "replace").rstrip("\r\n") if data else None


__all__ = ["can_ask", "chosen", "pick_port"]
