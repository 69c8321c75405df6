"""The terminal's turn status (:class:`TurnStatus`, mixed into :class:`~.terminal.TerminalSink`): while
agy works, the bottom line's spinner, what agy is doing, the elapsed time, this turn's tokens and the
model's display name, redrawn ten times a second; when a turn starts and ends, its line (``● running``,
``○ idle · 12.3s · 1,234 tokens · model``, ``✗ failed: why``); without a live status line, one token
summary per model call."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from agy_harness.core.turns import TurnEnded, Turns, TurnStarted
from agy_harness.ports.events import StatusChanged, Usage

from .escape import visible
from .terminal_cards import humane
from .terminal_screen import SPINNER, Screen, StreamWrap
from .terminal_stream import Kind


class TurnStatus:
    """The status line of :class:`~.terminal.TerminalSink` (which holds the state named below)."""

    if TYPE_CHECKING:
        screen: Screen
        _prompt: str | None
        _open: tuple[Kind, str] | None
        _wrap: StreamWrap | None
        _status_line: bool
        _turns: Turns
        _running_since: float | None
        _doing: str
        _ticker: asyncio.Task[None] | None

        def model_label(self, model: str) -> str: ...

        def _print(self, renderable: RenderableType) -> None: ...

        def _end_thinking(self) -> None: ...

    def _status_text(self, since: float) -> Text:
        """The bottom line while agy works (a turn started at ``since``, monotonic)."""
        elapsed = time.monotonic() - since
        spin = SPINNER[int(elapsed * 10) % len(SPINNER)]
        parts = [f"{spin} {self._doing}", f"{elapsed:.0f}s"]
        turn = self._turns.spent()
        if self._turns.reported and turn is not None:
            parts.append(f"{turn.input + turn.output:,} tokens")
        if self._turns.usage.model:
            parts.append(visible(self.model_label(self._turns.usage.model)))
        return Text(" · ".join(parts), style="dim")

    def _set_doing(self, doing: str) -> None:
        self._doing = doing

    async def _tick(self) -> None:
        while self._running_since is not None:
            await asyncio.sleep(0.1)
            if self._prompt is None and (self._open is None or self._wrap is not None):
                if self.screen.drawn:
                    self.screen.redraw()
                else:
                    self.screen.show()

    def _usage(self, event: Usage) -> None:
        self._turns.feed(event)
        if not self._status_line:  # no live status line: one summary line per model call
            model = f" · {self.model_label(event.model)}" if event.model else ""
            self._print(
                Text(
                    f"tokens · in {event.cumulative_input_tokens:,} · out {event.cumulative_output_tokens:,}"
                    f" · cache {event.cumulative_cache_read_input_tokens:,}{model}",
                    style="dim",
                )
            )

    def _status(self, event: StatusChanged) -> None:
        boundary = self._turns.feed(event)
        if isinstance(boundary, TurnStarted):
            self._running_since = time.monotonic()
            self._doing = "working"
            if not self._status_line:
                self._print(Text("● running", style="dim green"))
            elif self._ticker is None or self._ticker.done():
                with contextlib.suppress(RuntimeError):  # no running loop (render() called directly)
                    self._ticker = asyncio.get_running_loop().create_task(self._tick())
            return
        if not isinstance(boundary, TurnEnded):
            return
        elapsed = time.monotonic() - self._running_since if self._running_since is not None else None
        self._running_since = None
        self._end_thinking()
        took = ""
        if elapsed is not None and self._status_line:  # the status line's figures, kept
            took = f" · {elapsed:.1f}s"
            if boundary.reported and boundary.spent is not None:
                took += f" · {boundary.spent.input + boundary.spent.output:,} tokens"
            if self._turns.usage.model:
                took += f" · {visible(self.model_label(self._turns.usage.model))}"
        if boundary.status == "idle":
            self._print(Text(f"○ idle{took}", style="dim"))
        else:
            reason = f": {humane(boundary.reason)}" if boundary.reason else ""
            self._print(Text(f"✗ failed{reason}", style="bold red"))
