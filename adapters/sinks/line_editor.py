"""The line being typed, edited here instead of by the terminal (attach and the demo on a terminal).

With the terminal's own line editing (canonical mode, echo on) a key typed while a reply streams is
echoed where the cursor is: inside the reply. So on a terminal the keyboard switches echo and line
buffering off (signals stay on: Ctrl-C is still SIGINT) and keeps the line here; the sink draws it
on the bottom line (``❯ what is typed``), below whatever streams, and draws it again after a log line.

Keys: printable text, Backspace, Ctrl-U (clear), Ctrl-W (delete a word), Enter (the line), Ctrl-D
on an empty line (end of input). Escape sequences (arrows, function keys) and other control keys are
ignored.
"""

from __future__ import annotations

import contextlib
import os
import re
import termios
from collections.abc import Iterator

END = object()  # Ctrl-D on an empty line


class LineBuffer:
    def __init__(self) -> None:
        self.text = ""
        self._esc = ""

    def feed(self, data: str) -> list[str | object]:
        """Complete lines (and ``END``) in ``data``; what is left stays in :attr:`text`."""
        done: list[str | object] = []
        for ch in data:
            if self._esc:
                self._esc += ch
                if len(self._esc) == 2 and ch not in "[O":
                    self._esc = ""  # Alt-<key>
                elif len(self._esc) > 2 and (self._esc[1] == "O" or "\x40" <= ch <= "\x7e"):
                    self._esc = ""  # a complete CSI / SS3 sequence
                continue
            if ch == "\x1b":
                self._esc = ch
            elif ch in "\r\n":
                done.append(self.text)
                self.text = ""
            elif ch in ("\x7f", "\x08"):
                self.text = self.text[:-1]
            elif ch == "\x15":
                self.text = ""
            elif ch == "\x17":
                self.text = re.sub(r"\S*\s*$", "", self.text)
            elif ch == "\x04":
                if not self.text:
                    done.append(END)
            elif ch == "\t" or ch >= " ":
                self.text += ch
        return done


@contextlib.contextmanager
def keys_mode(fd: int) -> Iterator[None]:
    """Echo and line buffering off on terminal ``fd`` while inside (signals and CR -> LF stay on)."""
    saved = termios.tcgetattr(fd)
    mode = termios.tcgetattr(fd)
    mode[3] &= ~(termios.ICANON | termios.ECHO)
    mode[6][termios.VMIN] = 1
    mode[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
