"""One reader of the keyboard, shared by everything that asks the human something.

A terminal has one keyboard. When two threads read it (a turn loop and a gate's prompt), a line goes to
whichever read was started first, so an answer meant for a gate becomes a new turn. Here exactly one
daemon thread reads lines; each line goes to the most recent pending :meth:`Keyboard.read` (a gate's
prompt, opened while the turn loop was waiting, takes the next line; the turn loop gets the one after).
A line typed while nobody asks waits for the next reader, except a gate's: ``read(fresh=True)`` drops
what was typed before the question was shown (a ``y`` typed ahead never approves a command the human
has not seen). End of input (Ctrl-D) is given to the one reader waiting then as ``None``; a terminal
can be read again after it, a closed pipe cannot.

The thread is a daemon: a read nobody answers never keeps the process from exiting (Ctrl-C).

On a terminal (stdin and stdout a tty, no ``readline`` given) the line is edited here (:mod:`.line_editor`):
echo is off, :attr:`Keyboard.typed` is what is typed so far and ``on_change`` is called when it
changes, so the sink draws it on its bottom line. A gate's fresh read starts from an empty line and
gives back what was being typed before it when it is answered.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import os
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import TextIO

from .line_editor import END, LineBuffer, is_terminal, keys_mode


class Keyboard:
    def __init__(self, stream: TextIO | None = None, *, readline: Callable[[], str] | None = None) -> None:
        self._readline = readline or (stream or sys.stdin).readline
        #: the line is edited here, not by the terminal (both ends a terminal: it is drawn on stdout)
        self.editing = readline is None and stream is None and is_terminal(0) and is_terminal(1)
        self._line = LineBuffer()
        self.on_change: Callable[[], None] = lambda: None  # called on the loop when ``typed`` changes
        self._restore: contextlib.ExitStack | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: list[asyncio.Future[str | None]] = []  # a stack: the newest reader first
        self._typed: deque[str | None] = deque()  # lines nobody was waiting for
        self._thread: threading.Thread | None = None
        self.closed = False  # end of input on a stream that stays at its end (not a terminal)

    async def read(self, *, fresh: bool = False) -> str | None:
        """The next line without its newline; ``None`` at end of input. ``fresh``: a line typed
        before this call does not count (a gate's answer must be typed after its question)."""
        if fresh:
            self._typed = deque(line for line in self._typed if line is None)
            stash, self._line.text = self._line.text, ""  # typed before the question: not its answer
            try:
                return await self._read()
            finally:
                self._line.text = stash + self._line.text
                self.on_change()
        return await self._read()

    @property
    def typed(self) -> str:
        """What is typed on the line so far (on a terminal; else always empty)."""
        return self._line.text

    async def _read(self) -> str | None:
        if self._typed:
            return self._typed.popleft()
        if self.closed:
            return None
        loop = asyncio.get_running_loop()
        self._loop = loop
        future: asyncio.Future[str | None] = loop.create_future()
        self._waiting.append(future)
        self._start()
        try:
            return await future
        finally:
            with contextlib.suppress(ValueError):
                self._waiting.remove(future)

    def _start(self) -> None:
        if self._thread is None:
            if self.editing:
                self._restore = contextlib.ExitStack()
                self._restore.enter_context(keys_mode(0))
                atexit.register(self.close)
            target = self._run_keys if self.editing else self._run
            self._thread = threading.Thread(target=target, name="keyboard", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Give the terminal its own line editing back (also at exit)."""
        if self._restore is not None:
            self._restore.close()
            self._restore = None

    def _run_keys(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            try:
                data = os.read(0, 1024)
            except OSError:
                data = b""
            loop = self._loop
            if loop is None or loop.is_closed():
                return
            with contextlib.suppress(RuntimeError):  # the loop is gone: the process is ending
                loop.call_soon_threadsafe(self._keys, decoder.decode(data) if data else None)
            if not data:
                return

    def _keys(self, text: str | None) -> None:
        if text is None:  # the terminal went away
            self.closed = True
            self._deliver(None)
            return
        before = self._line.text
        for line in self._line.feed(text):
            self._deliver(None if line is END else str(line))
        if self._line.text != before or text:
            self.on_change()

    def _run(self) -> None:
        while True:
            try:
                line: str | None = self._readline()
            except (EOFError, OSError, ValueError):
                line = ""
            except KeyboardInterrupt:  # only the main thread gets SIGINT; a stray one ends input
                line = ""
            eof = not line
            if eof:
                line = None
            else:
                assert line is not None
                line = line.rstrip("\r\n")
            loop = self._loop
            if loop is None or loop.is_closed():
                return
            with contextlib.suppress(RuntimeError):  # the loop is gone: the process is ending
                loop.call_soon_threadsafe(self._deliver, line)
            if eof and not self._is_terminal():
                return

    def _is_terminal(self) -> bool:
        try:
            return sys.stdin.isatty()
        except (ValueError, OSError):
            return False

    def _deliver(self, line: str | None) -> None:
        if line is None and not self._is_terminal() and not self.editing:
            self.closed = True
        while self._waiting:
            future = self._waiting.pop()
            if not future.done():
                future.set_result(line)
                break
        else:
            self._typed.append(line)


class InputFnReader:
    """Lines from ``input_fn`` (``input`` by default), each read in a daemon worker thread; None at
    end of input. For a sink used without a :class:`Keyboard` (tests, the Python API)."""

    def __init__(self, input_fn: Callable[[str], str]) -> None:
        self.input_fn = input_fn
        self._reading: asyncio.Future[str] | None = None

    async def read(self) -> str | None:
        # A read still pending from a withdrawn prompt is reused (a thread cannot be interrupted).
        if self._reading is None or self._reading.done():
            self._reading = self._start()
        reading = self._reading
        try:
            line = await asyncio.shield(reading)
        except (EOFError, KeyboardInterrupt):
            self._reading = None
            return None
        self._reading = None
        return line

    def _start(self) -> asyncio.Future[str]:
        # a daemon thread, not the loop's executor: a prompt left unanswered must not block exit
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved even if unused

        def settle(line: str | None, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(line or "")

        def run() -> None:
            try:
                line = self.input_fn("")
            except BaseException as exc:
                error: BaseException | None = (
                    exc if isinstance(exc, Exception | KeyboardInterrupt) else EOFError()
                )
                with contextlib.suppress(RuntimeError):  # the loop is gone
                    loop.call_soon_threadsafe(settle, None, error)
                return
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, line, None)

        threading.Thread(target=run, name="terminal-sink-input", daemon=True).start()
        return future
