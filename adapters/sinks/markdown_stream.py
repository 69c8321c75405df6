"""Markdown rendered as it streams: a reply's ``**bold**`` shows bold, not as asterisks.

Deltas arrive in arbitrary pieces (``"**Sum"``, ``"mary**"``), so the renderer keeps a little state
(bold / italic / inline code / code fence / start of line) and holds back only what it cannot decide
yet (a trailing ``*`` that may become ``**``, the first characters of a line that may be ``# `` or
``- ``). Covered: ``**bold**``/``__bold__``, ``*italic*``/``_italic_`` (not inside words:
``snake_case`` stays), ``inline code``, fenced code blocks, ``#`` headings, ``-``/``*``/``+``
bullets, ``>`` quotes. Everything else is shown as written. The input is already neutralised text
(:mod:`.escape`); this only chooses styles and drops markup characters.
"""

from __future__ import annotations

import re

from rich.text import Text

_BULLET = re.compile(r"( *)([-*+]) ")
_HEADING = re.compile(r"(#{1,6}) ")
_QUOTE = re.compile(r"> ?")


class MarkdownStream:
    def __init__(self, base_style: str = "") -> None:
        self.base = base_style
        self.bold = False
        self.italic = False
        self.code = False
        self.fence = False
        self.heading = False
        self.line_start = True
        self.prev = " "  # the last character shown (for word boundaries)
        self.pending = ""

    def feed(self, text: str) -> Text:
        """Styled text for what can be shown of ``text`` now."""
        self.pending += text
        return self._run(final=False)

    def flush(self) -> Text:
        """Everything still held back (the message is complete)."""
        out = self._run(final=True)
        if self.pending:
            out.append(self.pending, style=self._style())
            self.pending = ""
        return out

    def _style(self) -> str:
        parts = [self.base] if self.base else []
        if self.fence or self.code:
            parts.append("cyan")
        else:
            if self.bold or self.heading:
                parts.append("bold")
            if self.italic:
                parts.append("italic")
        return " ".join(parts)

    def _emit(self, out: Text, chunk: str, style: str | None = None) -> None:
        if chunk:
            out.append(chunk, style=self._style() if style is None else style)
            self.prev = chunk[-1]

    def _run(self, *, final: bool) -> Text:
        out = Text()
        p = self.pending
        i: int | None = 0
        while i is not None and i < len(p):
            at = i
            i = self._line_head(out, p, i, final) if self.line_start else self._inline(out, p, i, final)
            if i is None:
                i = at  # not enough of the text yet to decide: kept for the next piece
                break
        self.pending = p[i:]
        return out

    def _line_head(self, out: Text, p: str, i: int, final: bool) -> int | None:
        """At the start of a line: a fence, heading, bullet or quote marker is consumed (the index
        after it); None when the line does not say yet what it starts with."""
        line_end = p.find("\n", i)
        head = p[i : i + 7] if line_end < 0 else p[i:line_end]
        if line_end < 0 and not final and len(head) < 7 and _undecided(head):
            return None  # not enough of the line yet to know what it starts with
        self.line_start = False
        if head.startswith("```"):
            if line_end < 0 and not final:
                self.line_start = True
                return None
            self.fence = not self.fence
            self.line_start = True
            return len(p) if line_end < 0 else line_end + 1  # the fence line itself is not shown
        if self.fence:
            return i
        if m := _HEADING.match(head):
            self.heading = True
            return i + m.end()
        if m := _BULLET.match(head):
            self._emit(out, f"{m.group(1)}• ", style=self.base or "")
            return i + m.end()
        if m := _QUOTE.match(head):
            self._emit(out, "│ ", style=(self.base + " dim").strip())
            return i + m.end()
        return i

    def _inline(self, out: Text, p: str, i: int, final: bool) -> int | None:
        """Inside a line: a newline, code (fenced or inline), emphasis markers, or plain text."""
        ch = p[i]
        if ch == "\n":
            self.heading = False
            self.line_start = True
            self._emit(out, "\n")
            return i + 1
        if self.fence:
            j = p.find("\n", i)
            j = len(p) if j < 0 else j
            self._emit(out, p[i:j])
            return j
        if ch == "`":
            self.code = not self.code
            return i + 1
        if self.code:
            j = i
            while j < len(p) and p[j] not in "`\n":
                j += 1
            self._emit(out, p[i:j])
            return j
        if ch in "*_":
            return self._emphasis(out, p, i, final)
        j = i
        while j < len(p) and p[j] not in "`*_\n":
            j += 1
        self._emit(out, p[i:j])
        return j

    def _emphasis(self, out: Text, p: str, i: int, final: bool) -> int | None:
        """``*``/``_`` (italic) or ``**``/``__`` (bold), opening or closing by what surrounds them;
        None when the next character, not here yet, decides."""
        ch = p[i]
        if i + 1 >= len(p) and not final:
            return None  # one or two markers? wait for the next piece
        double = i + 1 < len(p) and p[i + 1] == ch
        nxt = p[i + 2] if double and i + 2 < len(p) else (p[i + 1] if not double and i + 1 < len(p) else "")
        if double and i + 2 >= len(p) and not final:
            return None  # "**" at the end: the next character decides opening vs closing
        if double:
            if self.bold or (nxt and not nxt.isspace()):
                self.bold = not self.bold
                return i + 2
        else:
            opening = not self.italic and not self.prev.isalnum() and nxt and not nxt.isspace()
            closing = self.italic and not self.prev.isspace() and not (nxt.isalnum())
            if opening or closing:
                self.italic = not self.italic
                return i + 1
        self._emit(out, ch * (2 if double else 1))
        return i + (2 if double else 1)


def _undecided(head: str) -> bool:
    """Could the start of a line ``head`` still become markup (a fence, heading, bullet, quote)?"""
    stripped = head.lstrip(" ")
    if not stripped:
        return True
    for marker in ("```", "#", "- ", "* ", "+ ", ">"):
        if marker.startswith(stripped[: len(marker)]) or stripped.startswith(marker):
            return True
    return False


def render_markdown(text: str, base_style: str = "") -> Text:
    """A whole (committed) message rendered at once."""
    stream = MarkdownStream(base_style)
    out = stream.feed(text)
    out.append_text(stream.flush())
    return out
