"""The bottom line of the terminal: a prompt or a status line, never overwritten by output.

Whatever is drawn there without a newline (a gate's ``allow? [y/n]``, attach's ``❯``, the status
line ``⠹ thinking · 4s · 1,234 tokens · Gemini 3 Pro``) is cleared before anything else is printed
-- conversation output, or a log line on stderr -- and drawn again after it. So a warning that
arrives while a gate waits appears above the prompt, and the prompt stays the last line.

On a terminal the line is cleared in place (``\\r`` + erase line). Elsewhere (a pipe, a file) there is
no cursor to move: the prompt is printed once and output goes on the next line.

While a reply streams, its unfinished line sits just above the bottom line: :class:`StreamWrap`
word-wraps the reply itself (a word is never cut at the terminal's edge) and knows the column where
it stopped, so the bottom line can be cleared, the cursor put back at the end of the reply, the next
words written, and the bottom line drawn again below them.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator
from typing import ClassVar

from rich.cells import cell_len
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
        #: the column where an unfinished streamed line above the bottom line ends (None: no such line)
        self.above: Callable[[], int | None] = lambda: None
        self._over_stream = False  # the bottom line was drawn below an unfinished streamed line

    def hide(self) -> None:
        if not self.drawn:
            return
        self.drawn = False
        if self.live:
            back = ""
            col = self.above() if self._over_stream else None
            if col is not None:  # back to the end of the streamed line above
                back = f"\x1b[1A\x1b[{col + 1}G"
            self.console.file.write("\r\x1b[2K" + back)
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
        self._over_stream = self.live and self.above() is not None
        if self._over_stream:  # below the unfinished streamed line, which stays where it is
            self.console.file.write("\n")
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


class StreamWrap:
    """Word-wraps streamed text at ``width`` and tracks the column it ends at.

    A word that might go on in the next delta is held back, and so is the space before a word
    (:meth:`flush` gives what is held), so a word moves to the next line whole, never cut at the
    terminal's edge, and no line ends in a space. The last column stays free: the cursor never sits
    in the terminal's pending-wrap state. A line's own indent is kept.
    """

    _TOKEN = re.compile(r"\n|[^\S\n]+|\S+")

    def __init__(self, width: int, col: int = 0) -> None:
        self.room = max(10, width) - 1
        self.col = col
        self.held = Text()  # the last word, which may go on
        self.space = Text()  # the blanks before the next word
        self._line_start = col == 0

    def feed(self, text: Text) -> Text:
        """What can be printed of ``text`` now, with line breaks where the words would not fit."""
        text = Text.assemble(self.held, text)
        self.held = Text()
        out = Text()
        spans = [(m.start(), m.end()) for m in self._TOKEN.finditer(text.plain)]
        if spans and not text.plain[spans[-1][0]].isspace():  # a word may go on in the next delta
            self.held = text[spans.pop()[0] :]
        for start, end in spans:
            piece = text[start:end]
            if piece.plain == "\n":
                out.append("\n")
                self.col, self.space, self._line_start = 0, Text(), True
            elif piece.plain.isspace():
                if self._line_start:  # an indent
                    out.append_text(piece)
                    self.col += cell_len(piece.plain)
                else:
                    self.space.append_text(piece)
            else:
                self._word(out, piece)
        return out

    def _word(self, out: Text, piece: Text) -> None:
        space, self.space = self.space, Text()
        if self.col and self.col + cell_len(space.plain) + cell_len(piece.plain) > self.room:
            out.append("\n")
            self.col = 0
        elif space.plain:
            out.append_text(space)
            self.col += cell_len(space.plain)
        self._line_start = False
        while cell_len(piece.plain) > self.room - self.col:  # longer than a line: cut it
            cut = max(1, self.room - self.col)
            out.append_text(piece[:cut])
            out.append("\n")
            piece, self.col = piece[cut:], 0
        out.append_text(piece)
        self.col += cell_len(piece.plain)

    def flush(self) -> Text:
        held, self.held = self.held, Text()
        out = Text()
        if held.plain:
            self._word(out, held)
        return out


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
def logs_through(screen: Screen, level: int = logging.NOTSET) -> Iterator[None]:
    """While inside: the root logger's stderr handlers print through ``screen`` (same format), the
    records of ``level`` and above (NOTSET: every record the loggers pass)."""
    root = logging.getLogger()
    replaced = [
        h
        for h in root.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    handler = ScreenLogHandler(screen, level)
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
