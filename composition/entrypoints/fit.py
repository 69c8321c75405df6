"""Lines fitted to the terminal they are printed on (issue 47: ``doctor``, ``record`` and ``audit`` wrote
lines of 100-300 columns into an 80-column terminal, cut mid-word by the terminal's own wrap).

On a terminal, a line longer than its width is wrapped at spaces, each following line indented under
the first's text (a word longer than a line is split, never cut: every character is still shown, in
order). Elsewhere (a pipe, a file) lines go out whole, so ``grep`` and scripts read one record per line.
"""

from __future__ import annotations

import os
import textwrap
from typing import TextIO

MIN_WIDTH = 40
HANG = 4  # a wrapped line's extra indent, under its first line


def columns(stream: TextIO) -> int | None:
    """The width of the terminal ``stream`` writes to; None when it is not a terminal."""
    try:
        if not stream.isatty():
            return None
        width = os.get_terminal_size(stream.fileno()).columns  # this stream's terminal (stdout may be a pipe)
    except (AttributeError, ValueError, OSError):  # closed, or not a real stream
        return None
    if os.environ.get("COLUMNS", "").isdigit():  # the user's (or the shell's) own say, as shutil reads it
        width = int(os.environ["COLUMNS"])
    return max(MIN_WIDTH, width)


def fit(text: str, stream: TextIO) -> str:
    """``text`` with each line wrapped to ``stream``'s terminal (as it is when not a terminal)."""
    width = columns(stream)
    if width is None:
        return text
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip(" "))
        hang = " " * (lead + HANG if lead + HANG <= width // 2 else lead)
        out.extend(
            textwrap.wrap(line, width, subsequent_indent=hang, break_on_hyphens=False, break_long_words=True)
        )
    return "\n".join(out)


def say(text: str, stream: TextIO) -> None:
    """Print ``text`` fitted to ``stream``."""
    print(fit(text, stream), file=stream)


__all__ = ["columns", "fit", "say"]
