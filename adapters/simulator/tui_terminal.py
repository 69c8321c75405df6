"""The terminal the simulated agy TUI runs in: raw-ish input and bracketed paste, restored on exit."""

from __future__ import annotations

import contextlib
import os
import termios
from collections.abc import Iterator


@contextlib.contextmanager
def raw_terminal(fd: int = 0, out_fd: int = 1) -> Iterator[None]:
    """Raw-ish input (no echo, no line buffering, no signals, CR kept distinct from LF); output
    post-processing stays on. Bracketed paste mode on while inside."""
    saved = None
    if os.isatty(fd):
        saved = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        mode[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR | termios.IXON | termios.ISTRIP)
        mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
        mode[6][termios.VMIN] = 1
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    with contextlib.suppress(OSError):
        os.write(out_fd, b"\x1b[?2004h")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.write(out_fd, b"\x1b[?2004l\r\n")
        if saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)
