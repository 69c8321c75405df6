"""Replies and thoughts as they stream, for the terminal sink (:class:`StreamedText`, a part of it).

* Replies stream as they arrive, markdown rendered (:mod:`.markdown_stream`); the committed
  AssistantMessage prints only what the stream has not shown (nothing after a complete stream, the
  missing tail after a cut stream, the whole text when nothing streamed or the stream diverged).
  A reply continued after something else printed (a notice, a log line) goes on without a second ◆.
  Replayed deltas (an ``index`` already shown for that message) are skipped.
* On a terminal the text is word-wrapped here (:class:`.terminal_screen.StreamWrap`), so the bottom
  line (a prompt, what is being typed, the status line) stays below it while it streams.
* A thought whose last words were never seen ends in " …" (agy drops a finished planner's thinking:
  on an agy that is polled, the end can fall between two polls).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from rich.text import Text

from agy_harness.core.turns import Replies

from .markdown_stream import MarkdownStream
from .terminal_screen import StreamWrap

if TYPE_CHECKING:
    from rich.console import Console

    from agy_harness.ports.events import AssistantMessage

    from .terminal_screen import Screen

__all__ = ["ENDS_A_THOUGHT", "Kind", "MarkdownStream", "StreamedText"]

Kind = Literal["text", "reasoning"]

#: A thought that ends in one of these was seen whole; any other end gets " …".
ENDS_A_THOUGHT = frozenset(".!?:;…)]}`\"'*")


class StreamedText:
    """The streaming half of :class:`~.terminal.TerminalSink` (it owns the state this uses)."""

    console: Console
    screen: Screen
    _open: tuple[Kind, str] | None
    _broken: set[tuple[Kind, str]]
    _md: dict[tuple[Kind, str], MarkdownStream]
    _replies: Replies  # the reply streams (core/turns.py: a replayed delta skipped, retired by the commit)
    _thoughts: Replies
    _wrap: StreamWrap | None
    _tails: dict[tuple[Kind, str], str]

    def _stream_col(self) -> int | None:
        return self._wrap.col if self._open is not None and self._wrap is not None else None

    def _close_line(self) -> None:
        if self._open is not None:
            self._broken.add(self._open)
            if self._wrap is not None:
                self.console.print(self._wrap.flush(), end="", soft_wrap=True)
            self.console.print()
            self._open = None

    def _stream(self, kind: Kind, message_id: str, index: int, delta: str) -> None:
        replies = self._replies if kind == "text" else self._thoughts
        if not replies.delta(message_id, index, delta):
            return  # a replayed delta, or the empty closing one: nothing to show (no empty "◆ " line)
        self._write(kind, message_id, delta)

    def _write(self, kind: Kind, message_id: str, text: str, *, final: bool = False) -> None:
        key = (kind, message_id)
        md = self._md.setdefault(key, MarkdownStream("" if kind == "text" else "dim italic"))
        shown = md.feed(text)
        if final:
            shown.append_text(md.flush())
            self._md.pop(key, None)
        if kind == "reasoning":
            tail = self._tails[key] = (self._tails.get(key, "") + shown.plain)[-8:]
            if final:
                self._tails.pop(key)
                if tail.strip() and tail.rstrip()[-1] not in ENDS_A_THOUGHT:  # agy dropped the rest
                    shown.append("…" if tail[-1].isspace() else " …", style="dim italic")
        if not shown.plain and not (final and self._open == key):
            return
        self.screen.hide()
        if self._open != key:
            self._close_line()
            prefix = "  " if key in self._broken else ("◆ " if kind == "text" else "thinking ")
            style = "bold blue" if kind == "text" else "dim italic"
            self.console.print(Text(prefix, style=style), end="")  # (the same reply, continued: no ◆)
            self._open = key
            self._wrap = StreamWrap(self.console.width, len(prefix)) if self.screen.live else None
        if self._wrap is not None:
            shown = self._wrap.feed(shown)
            if final:
                shown.append_text(self._wrap.flush())
        self.console.print(shown, end="", soft_wrap=True)

    def _end_stream(self, kind: Kind, message_id: str) -> None:
        key = (kind, message_id)
        if key in self._md:
            self._write(kind, message_id, "", final=True)
        if self._open == key:
            self.console.print()
            self._open = None
        self._broken.discard(key)

    def _end_thinking(self) -> None:
        for key in [k for k in self._md if k[0] == "reasoning"]:
            self._end_stream(*key)

    def _assistant(self, event: AssistantMessage) -> None:
        self._end_stream("reasoning", event.message_id)
        commit = self._replies.commit(event.message_id, event.text)
        if not commit.diverged:
            self._write("text", event.message_id, commit.rest, final=True)
        else:  # the stream showed another text: the committed one is written whole
            self._md.pop(("text", event.message_id), None)
            self._broken.discard(("text", event.message_id))
            self._write("text", event.message_id, event.text, final=True)
        self._end_stream("text", event.message_id)
