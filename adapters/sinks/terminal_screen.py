"""The bottom line of the terminal: a prompt or a status line, never overwritten by output.

Whatever is drawn there without a newline (a gate's ``allow? [y/n]``, attach's ``❯``, the status
line ``⠹ thinking · 4s · 1,234 tokens · Gemini 3 Pro``) is cleared before anything else is printed
-- conversation output, or a log line on stderr -- and drawn again after it. So a warning that
arrives while a gate waits appears above the prompt, and the prompt stays the last line.

On a terminal the line is cleared in place (``\\r`` + erase line). Elsewhere (a pipe, a file) there is
no cursor to move: the prompt is printed once and output goes on the next line.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import ClassVar

from rich.console import Console
from rich.text import Text

from .escape import visible

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Screen:
    def __init__(self, console: Console, err_console: Console | None = None) -> None:
        self.console = console
        self.err = err_console if err_console is not None else Console(stderr=True)
        self.live = console.is_terminal
        self.drawn = False  # something transient sits on the current line
        self.bottom: Callable[[], Text | None] = lambda: None
        #: called before output while a stream line is open (the sink ends that line first)
        self.break_line: Callable[[], None] = lambda: None

    def hide(self) -> None:
        if not self.drawn:
            return
        self.drawn = False
        if self.live:
            self.console.file.write("\r\x1b[2K")
            self.console.file.flush()
        else:
            self.console.print()

    def show(self, *, force: bool = False) -> None:
        """Draw the bottom line (on a terminal; elsewhere only when ``force``d: a prompt, once)."""
        if self.drawn or not (self.live or force):
            return
        text = self.bottom()
        if text is None or not text.plain:
            return
        if self.live and len(text.plain) >= self.console.width:
            text = text.copy()
            text.truncate(max(1, self.console.width - 1), overflow="ellipsis")
        self.console.print(text, end="", soft_wrap=True)
        self.console.file.flush()
        self.drawn = True

    def redraw(self) -> None:
        if self.drawn:
            self.hide()
            self.show()

    def entered(self) -> None:
        """The human pressed Enter at the prompt: the terminal moved to a new line by itself."""
        self.drawn = False

    def erase_rows(self, rows: int) -> None:
        """Erase the ``rows`` lines just above the cursor (what the terminal echoed of a typed line)."""
        if self.live and rows > 0:
            self.console.file.write("\x1b[1A\r\x1b[2K" * rows)
            self.console.file.flush()

    def log(self, text: str, style: str) -> None:
        """A log line on stderr, above the bottom line."""
        was = self.drawn
        self.hide()
        self.break_line()
        self.err.print(Text(visible(text), style=style), soft_wrap=True)
        if was:
            self.show()


class ScreenLogHandler(logging.Handler):
    """Routes log records through :meth:`Screen.log` so they never land inside a prompt."""

    STYLES: ClassVar[dict[int, str]] = {
        logging.WARNING: "yellow",
        logging.ERROR: "bold red",
        logging.CRITICAL: "bold red",
    }

    def __init__(self, screen: Screen, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.screen = screen

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            self.screen.log(text, self.STYLES.get(record.levelno, "dim"))
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def logs_through(screen: Screen) -> Iterator[None]:
    """While inside: the root logger's stderr handlers print through ``screen`` (same format, level)."""
    root = logging.getLogger()
    replaced = [
        h
        for h in root.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    handler = ScreenLogHandler(screen)
    fmt = next((h.formatter for h in replaced if h.formatter is not None), None)
    handler.setFormatter(fmt or logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    for h in replaced:
        root.removeHandler(h)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        for h in replaced:
            root.addHandler(h)
