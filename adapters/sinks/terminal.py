"""The terminal event sink: the conversation rendered live with rich; gates asked at the keyboard.

* Every event is neutralised first (:func:`.escape.visible_event`: agy-controlled text never reaches
  the terminal as a control sequence); every other string printed goes through :func:`.escape.visible`.
* Replies stream as they arrive, markdown rendered (:mod:`.markdown_stream`); the committed
  AssistantMessage prints only what the stream has not shown (nothing after a complete stream, the
  missing tail after a cut stream, the whole text when nothing streamed or the stream diverged).
  A reply continued after something else printed (a notice, a log line) goes on without a second ◆.
  Replayed deltas (an ``index`` already shown for that message) are skipped.
* Thinking is shown dimmed under ``thinking``; tool calls and results are cards (:mod:`.terminal_cards`:
  the command and cwd, paths and diffs, a question and its options, outputs cut head-and-tail).
* While agy works, a status line at the bottom shows a spinner, what it is doing, the elapsed time,
  the tokens of this turn and the model's display name (``model_names``, from agy's catalog;
  :mod:`.terminal_status`).
  Prompts and the status line are never overwritten by output or log lines (:mod:`.terminal_screen`).
* No internal ids on screen: gates, conversations and sub-agents are described, not numbered.
* Gates (:meth:`TerminalSink.ask`) are numbered prompts: a question's options are ``1``..``N``
  (comma-separated for a multi-select; other text is an option's label or a write-in), a permission
  is ``y``/``n``; ``/cancel`` or ``/decline`` refuse, end of input (Ctrl-D) cancels. Lines come from
  the one :class:`.keyboard.Keyboard` when given (attach and demo share it with their own input), else
  from ``input_fn`` in a worker thread. With ``auto_answer`` the sink answers by itself and says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import assert_never

from rich.console import Console, RenderableType
from rich.text import Text

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.adapters.sinks.escape import visible, visible_event
from agy_harness.adapters.sinks.keyboard import InputFnReader, Keyboard
from agy_harness.adapters.sinks.model_names import ModelNames
from agy_harness.adapters.sinks.terminal_answers import (
    ask_at_keyboard,
    describe_answer,
    parse_choice,
    parse_permission,
)
from agy_harness.adapters.sinks.terminal_asked import ClosedCards, asked, call_key, is_asked
from agy_harness.adapters.sinks.terminal_cards import (
    crlf,
    gate_card,
    humane,
    result_card,
    tool_card,
    truncate_output,
)
from agy_harness.adapters.sinks.terminal_screen import Screen, StreamWrap
from agy_harness.adapters.sinks.terminal_status import TurnStatus
from agy_harness.adapters.sinks.terminal_stream import Kind, MarkdownStream, StreamedText
from agy_harness.core.decided_line import decided_line
from agy_harness.core.elicitation import TIMED_OUT
from agy_harness.core.turns import Replies, Turns
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    ReasoningDelta,
    Rotation,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from agy_harness.ports.protocols import GateAnswer, ModelCatalog

__all__ = [
    "TerminalSink",
    "describe_answer",
    "humane",
    "parse_choice",
    "parse_permission",
    "truncate_output",
]

log = logging.getLogger("agy_harness.adapters.sinks.terminal")


class TerminalSink(StreamedText, TurnStatus):
    """An :class:`~agy_harness.ports.protocols.EventSink` for a human at a terminal (see module doc)."""

    #: one prompt at a time: the harness shows the newest request first (the older ones come back)
    max_concurrent_asks = 1
    surface = "attach"  # where its human decides (the decision ledger)

    def __init__(
        self,
        console: Console | None = None,
        *,
        auto_answer: Callable[[GateOpened], GateAnswer] | None = None,
        input_fn: Callable[[str], str] = input,
        keyboard: Keyboard | None = None,
        max_output_lines: int = 12,
        err_console: Console | None = None,
        status_line: bool = True,
    ) -> None:
        self.console = console if console is not None else Console()
        self.auto_answer = auto_answer
        self.input_fn = input_fn
        self.keyboard = keyboard
        self.max_output_lines = max_output_lines
        #: agy's display names of its model ids, once the session binds its catalog (ShowsModelNames)
        self.models = ModelNames()
        self.screen = Screen(self.console, err_console)
        self.screen.bottom = self._bottom
        self.screen.break_line = self._close_line
        self.screen.above = self._stream_col
        self._wrap: StreamWrap | None = None  # the open streamed line, word-wrapped (on a terminal)
        self._tails: dict[tuple[Kind, str], str] = {}  # a thought's last visible character
        if keyboard is not None:
            keyboard.on_change = self._typing
        self._status_line = status_line and self.screen.live
        self._open: tuple[Kind, str] | None = None  # the stream on the current line
        self._broken: set[tuple[Kind, str]] = set()  # streams something else interrupted
        self._md: dict[tuple[Kind, str], MarkdownStream] = {}
        self._replies = Replies()  # the replies' streams, retired by their committed messages
        self._thoughts = Replies(keep_text=False)
        self._prompt_lock = asyncio.Lock()
        self._asks = PendingAsks()
        self._input = InputFnReader(input_fn)  # without a keyboard: input_fn in a worker thread
        self._prompt: str | None = None  # a gate's prompt, while it waits for a line
        self.turn_prompt = False  # attach: show ❯ when agy is idle
        # the status line
        self._turns = Turns()  # turn boundaries and this turn's tokens (core/turns.py)
        self._running_since: float | None = None
        #: the tool and request a gate card just showed: its call is not shown again as a card
        self._asked: tuple[str, str] | None = None
        self._last_call = ""  # the call_key of the last tool call shown
        self._cards = ClosedCards()  # the cards on screen, and one agy closed unanswered
        self._doing = "working"
        self._ticker: asyncio.Task[None] | None = None

    # -- what the bottom line shows -------------------------------------------------------------

    def bind_model_catalog(self, catalog: ModelCatalog) -> None:
        self.models.bind(catalog)

    def model_label(self, model: str) -> str:
        return self.models.name(model)

    def _bottom(self) -> Text | None:
        typed = visible(self.keyboard.typed) if self.keyboard is not None else ""
        if self._prompt is not None:
            return Text.assemble((self._prompt, "bold yellow"), typed)
        if self._open is not None and self._wrap is None:  # the cursor is inside a streamed line
            return None
        if typed:  # typed while agy works: shown where it is typed, never inside the reply
            return Text.assemble(("❯ ", "bold green"), typed)
        if self._running_since is not None and self._status_line:
            return self._status_text(self._running_since)
        if self.turn_prompt:
            return Text("❯ ", style="bold green")
        return None

    def _typing(self) -> None:
        """The line being typed changed: draw the bottom line again."""
        if self.screen.drawn:
            self.screen.redraw()
        else:
            self.screen.show()

    def close(self) -> None:
        """Leave the terminal clean: the status line and any prompt cleared, an open line ended."""
        self._running_since = None
        if self._ticker is not None:
            self._ticker.cancel()
        self._prompt = None
        self.turn_prompt = False
        self.screen.hide()
        self._close_line()

    # -- events ---------------------------------------------------------------------------------

    async def deliver(self, events: Sequence[Event]) -> int:
        for event in events:
            if isinstance(event, Usage | ModelChanged):
                await self.models.learn(event.model)
            try:
                self.render(event)
            except Exception:  # a rendering bug must not wedge the stream
                log.exception("could not render %s", event.id)
        self.screen.show()
        return len(events)

    def info(self, text: str) -> None:
        """A line from the harness itself (the demo's narration, attach's status of agy): above the
        bottom line, which is drawn again as it was (a prompt keeps what was being typed)."""
        was = self.screen.drawn
        self._print(Text(f"· {visible(text)}", style="dim cyan"))
        if was:
            self.screen.show()

    def render(self, event: Event) -> None:
        raw = event = crlf(event)
        event = visible_event(event)  # agy-controlled text never reaches the terminal as a control
        match event:
            case TextDelta():
                self._set_doing("writing")
                self._end_stream("reasoning", event.message_id)
                self._stream("text", event.message_id, event.index, event.delta)
            case ReasoningDelta():
                self._set_doing("thinking")
                self._stream("reasoning", event.message_id, event.index, event.delta)
            case AssistantMessage():
                self._assistant(event)
            case UserMessage():
                self._last_call = ""  # a new turn: its calls are its own
                self._cards.turn()
                self._print(Text.assemble(("❯ ", "bold green"), (event.text, "bold")))
            case ToolCall():
                self._set_doing(f"running {event.name.replace('_', ' ')}")
                self._end_thinking()
                key, self._last_call = self._last_call, call_key(event)
                self._cards.call(event)
                if self._asked is not None and is_asked(self._asked, event):  # the card above asked it
                    self._print(Text(f"⚙ {visible(event.name)} (as asked above)", style="dim"))
                elif key == self._last_call:  # agy's retry of the call just above: its card once
                    self._print(Text(f"⚙ {visible(event.name)} again (the same call as above)", style="dim"))
                else:
                    self._print(tool_card(event))
                self._asked = None
            case ToolResult():
                self._cards.result(event)
                self._set_doing("working")
                self._print(result_card(event, self.max_output_lines, getattr(raw, "output", None)))
            case StatusChanged():
                self._status(event)
            case Usage():
                self._usage(event)
            case ModelChanged():
                self._turns.feed(event)
                self._print(Text(f"model → {visible(self.model_label(event.model))}", style="magenta"))
            case GateWithdrawn():
                self._withdrawn(event)
            case Rotation():
                self._print(Text("↻ agy started a new conversation (/clear); following it", style="cyan"))
            case SubagentStarted():
                self._print(Text("⑂ a sub-agent started", style="cyan"))
            case Notice():
                style = {"info": "dim", "warning": "yellow", "error": "bold red"}[event.level]
                mark = {"info": "ℹ", "warning": "⚠", "error": "✗"}[event.level]
                self._print(Text(f"{mark} {humane(event.text)}", style=style))
            case GateOpened():
                pass  # rendered by ask(), which is where the human answers it
            case other:
                assert_never(other)

    def _withdrawn(self, event: GateWithdrawn) -> None:
        decided = decided_line(event.decided_by) if event.decided_by is not None else ""
        if event.reason and event.reason != "answered":  # an answer was already echoed
            gate = self._cards.closed(event.gate_id, timed_out=event.reason == TIMED_OUT)
            if gate is not None:  # its card is above: its call is not shown again as a card
                self._asked = asked(gate)
            if decided.startswith(event.reason):  # "timed out" and "timed out, 04:18": one line
                self._print(Text(f"the gate closed: {decided}", style="yellow"))
                return
            self._print(Text(f"the gate closed: {event.reason}", style="yellow"))
        if decided:  # who decided it, where (the decision ledger's)
            self._print(Text(f"· {decided}", style="dim"))

    # -- output ---------------------------------------------------------------------------------

    def _print(self, renderable: RenderableType) -> None:
        self.screen.hide()
        self._close_line()
        self.console.print(renderable)

    # -- gates ----------------------------------------------------------------------------------

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return await self._asks.run(gate.gate_id, self._ask(gate), f"terminal-ask-{gate.gate_id}")

    async def withdraw(self, gate_id: str) -> None:
        self._asks.cancel(gate_id)

    async def _ask(self, gate: GateOpened) -> GateAnswer:
        shown = visible_event(gate)  # displayed; answers are read against the gate as agy sent it
        async with self._prompt_lock:
            self._end_thinking()  # agy asks: the thought before it is over (its end shown as it is)
            again = self._cards.shown(gate)  # the same as the card or call above: a re-ask, said once
            if again:
                self._print(Text(f"↻ agy asks again ({again}):", style="yellow"))
            self._print(gate_card(gate, keys=self.auto_answer is None))  # it neutralises what it shows
            if self.auto_answer is not None:
                answer = self.auto_answer(gate)
                self._print(
                    Text(f"auto-answer → {visible(describe_answer(shown, answer))}", style="bold magenta")
                )
                self._asked = asked(gate)
                self._cards.ended(gate.gate_id)
                return answer
            asked_at = time.monotonic()
            try:
                answer = await self._ask_keyboard(gate)
            except asyncio.CancelledError:
                self._prompt = None
                if not self._cards.ended(gate.gate_id):  # (else "the gate closed: ..." said it)
                    self._print(
                        Text("(agy no longer waits for this answer: the prompt is closed)", style="yellow")
                    )
                raise
            finally:
                if self._running_since is not None:  # the human's thinking is not agy's working time
                    self._running_since += time.monotonic() - asked_at
            self._cards.ended(gate.gate_id)
            self._print(Text(f"→ {visible(describe_answer(shown, answer))}", style="bold"))
            self._asked = asked(gate)
            return answer

    async def _ask_keyboard(self, gate: GateOpened) -> GateAnswer:
        return await ask_at_keyboard(gate, self._read, lambda text: self._print(Text(text, style="yellow")))

    async def _read(self, prompt: str) -> str | None:
        """One line typed after ``prompt`` is shown; None at end of input (Ctrl-D)."""
        self.screen.hide()
        self._close_line()
        self._prompt = prompt
        self.screen.show(force=True)
        try:
            if self.keyboard is not None:
                line = await self.keyboard.read(fresh=True)
            else:
                line = await self._input.read()
        finally:
            self._prompt = None
        if self.keyboard is not None and self.keyboard.editing:  # no echo: the answer, kept on screen
            self.screen.hide()
            self.console.print(Text.assemble((prompt, "bold yellow"), visible(line or "")))
        else:
            self.screen.entered()
        return line

    async def read_turn(self) -> str | None:
        """attach: the next line the human types as a turn (❯ shown while agy is idle)."""
        if self.keyboard is None:
            raise RuntimeError("read_turn needs a keyboard")
        self.turn_prompt = True
        self.screen.show()
        try:
            line = await self.keyboard.read()
            at_prompt = self.screen.drawn and self._bottom_is_turn_prompt()
        finally:
            self.turn_prompt = False
        if self.keyboard.editing:  # nothing was echoed: the turn shows once, as agy records it (❯ ...)
            self.screen.redraw()
            return line
        self.screen.entered()
        if line is not None and at_prompt:  # typed at ❯: shown once, as agy records the turn (❯ ...)
            self.screen.erase_rows(-(-(len(line) + 2) // max(1, self.console.width)))
        return line

    def _bottom_is_turn_prompt(self) -> bool:
        bottom = self._bottom()
        return bottom is not None and bottom.plain == "❯ "
