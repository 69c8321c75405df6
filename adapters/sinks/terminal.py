"""The terminal event sink: the conversation rendered live with rich; gates asked at the keyboard.

* Text deltas are printed as they arrive. The committed AssistantMessage that follows prints only
  what the stream has not shown yet (nothing after a complete stream, the missing tail after a cut
  stream, the whole text when nothing streamed or the stream diverged) -- no double render.
  Replayed deltas (an ``index`` already shown for that message) are skipped.
* Reasoning deltas are printed dimmed, prefixed ``thinking``.
* Tool calls are cards with the tool name and its command line (``$ git status`` and the cwd) or its
  arguments; tool results are cards with the output, cut to ``max_output_lines`` (head and tail kept).
* Status edges, token usage, model changes, rotations and notices are one line each.
* Gates (:meth:`TerminalSink.ask`) are numbered prompts: a question's options are ``1``..``N``
  (comma-separated numbers for a multi-select, any other text is the answer itself: an option's label
  or a write-in), a permission is ``y``/``n``; ``/cancel`` or ``/decline`` refuse, end of input
  cancels. ``input_fn`` runs in a worker thread so the event loop keeps rendering. With
  ``auto_answer`` the sink answers by itself and prints the answer (``agy-harness demo --auto``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from agy_harness.adapters.sinks.asks import PendingAsks
from agy_harness.adapters.sinks.escape import visible, visible_event
from agy_harness.core.answers import ALLOW_WORDS, DENY_WORDS, AnswerError, parse_answer, resolve_question
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    Question,
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
from agy_harness.ports.protocols import GateAnswer

log = logging.getLogger("agy_harness.adapters.sinks.terminal")

#: Argument names that hold a tool's command line / working directory (agy's and common spellings).
COMMAND_KEYS = ("CommandLine", "command_line", "commandLine", "command", "cmd")
CWD_KEYS = ("Cwd", "cwd", "working_directory", "workdir")
SUMMARY_KEYS = ("toolSummary", "toolAction")


def _first(arguments: dict[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def truncate_output(output: str, max_lines: int = 12, max_line_chars: int = 300) -> str:
    """``output`` cut for a card: long lines shortened, the middle of long outputs elided."""
    lines = output.rstrip("\n").split("\n") if output.strip() else []
    lines = [ln if len(ln) <= max_line_chars else ln[: max_line_chars - 1] + "…" for ln in lines]
    if len(lines) > max_lines:
        tail = max(1, max_lines // 4)
        head = max_lines - tail - 1
        hidden = len(lines) - head - tail
        lines = [*lines[:head], f"… {hidden} more lines …", *lines[-tail:]]
    return "\n".join(lines)


def parse_choice(question: Question, line: str) -> tuple[str, ...] | None:
    """A typed answer to one question -> selections (option ids, or the text itself); None = invalid.

    Only numbers ("2", "1,3"): the options at those positions (several only for a multi-select).
    Anything else is one answer: an option's label or a write-in (the core tells them apart).
    """
    text = line.strip()
    if not text:
        return None
    tokens = [t.strip() for t in text.split(",")]
    if question.options and all(t.isdigit() for t in tokens):
        positions = [int(t) for t in tokens]
        if any(not 1 <= p <= len(question.options) for p in positions):
            return None
        ids: list[str] = []
        for p in positions:
            option_id = question.options[p - 1].id
            if option_id not in ids:
                ids.append(option_id)
        if len(ids) > 1 and not question.multi_select:
            return None
        return tuple(ids)
    return (text,)


def parse_permission(line: str) -> bool | None:
    """A typed permission answer, read by the core's one fail-closed parser: True only for an explicit
    allow word, False for a deny word, None (ask again) for anything else."""
    word = " ".join(line.split()).casefold()
    if word in ALLOW_WORDS:
        return True
    if word in DENY_WORDS:
        return False
    return None


def describe_answer(gate: GateOpened, answer: GateAnswer) -> str:
    """A one-line human reading of ``answer`` (option ids shown as their texts)."""
    if answer.action != "accept":
        return "declined" if answer.action == "decline" else "cancelled"
    if gate.kind == "permission":
        return {True: "allow", False: "deny"}.get(answer.allow, "no answer (refused: not an explicit allow or deny)")
    parts: list[str] = []
    for i, question in enumerate(gate.questions):
        choices = answer.selections[i] if i < len(answer.selections) else ()
        texts = [next((o.text for o in question.options if o.id == c), c) for c in choices]
        if i < len(answer.write_ins) and answer.write_ins[i]:
            texts.append(answer.write_ins[i])
        parts.append(", ".join(texts) if texts else "(no answer)")
    return "; ".join(parts)


class TerminalSink:
    """An :class:`~agy_harness.ports.protocols.EventSink` for a human at a terminal (see module doc)."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        auto_answer: Callable[[GateOpened], GateAnswer] | None = None,
        input_fn: Callable[[str], str] = input,
        max_output_lines: int = 12,
    ) -> None:
        self.console = console if console is not None else Console()
        self.auto_answer = auto_answer
        self.input_fn = input_fn
        self.max_output_lines = max_output_lines
        self._open: tuple[Literal["text", "reasoning"], str] | None = None  # the stream on the line
        self._streamed: dict[str, str] = {}  # message_id -> text shown so far
        self._last_index: dict[tuple[str, str], int] = {}
        self._prompt_lock = asyncio.Lock()
        self._asks = PendingAsks()
        self._reading: asyncio.Future[str] | None = None

    # -- events ---------------------------------------------------------------------------------

    async def deliver(self, events: Sequence[Event]) -> int:
        for event in events:
            try:
                self.render(event)
            except Exception:  # a rendering bug must not wedge the stream
                log.exception("could not render %s", event.id)
        return len(events)

    def info(self, text: str) -> None:
        """A line from the harness itself (the demo's narration)."""
        self._close_line()
        self.console.print(Text(f"· {visible(text)}", style="dim cyan"))

    def render(self, event: Event) -> None:
        event = visible_event(event)  # agy-controlled text never reaches the terminal as a control
        if isinstance(event, TextDelta):
            self._stream("text", event.message_id, event.index, event.delta)
        elif isinstance(event, ReasoningDelta):
            self._stream("reasoning", event.message_id, event.index, event.delta)
        elif isinstance(event, AssistantMessage):
            self._assistant(event)
        elif isinstance(event, UserMessage):
            self._line(Text.assemble(("❯ ", "bold green"), (event.text, "bold")))
        elif isinstance(event, ToolCall):
            self._print(self._tool_card(event))
        elif isinstance(event, ToolResult):
            self._print(self._result_card(event))
        elif isinstance(event, StatusChanged):
            self._status(event)
        elif isinstance(event, Usage):
            model = f" · {event.model}" if event.model else ""
            self._line(
                Text(
                    f"tokens · in {event.cumulative_input_tokens:,} · out {event.cumulative_output_tokens:,}"
                    f" · cache {event.cumulative_cache_read_input_tokens:,}{model}",
                    style="dim",
                )
            )
        elif isinstance(event, ModelChanged):
            self._line(Text(f"model → {event.model}", style="magenta"))
        elif isinstance(event, GateWithdrawn):
            reason = f": {event.reason}" if event.reason else ""
            self._line(Text(f"gate {event.gate_id} withdrawn{reason}", style="yellow"))
        elif isinstance(event, Rotation):
            self._line(
                Text(f"↻ conversation rotated: {event.old_cascade_id} → {event.new_cascade_id}", style="cyan")
            )
        elif isinstance(event, SubagentStarted):
            self._line(Text(f"⑂ sub-agent {event.child_cascade_id} started", style="cyan"))
        elif isinstance(event, Notice):
            style = {"info": "dim", "warning": "yellow", "error": "bold red"}[event.level]
            mark = {"info": "ℹ", "warning": "⚠", "error": "✗"}[event.level]
            self._line(Text(f"{mark} {event.text}", style=style))
        # GateOpened: rendered by ask(), which is where the human answers it

    def _close_line(self) -> None:
        if self._open is not None:
            self.console.print()
            self._open = None

    def _print(self, renderable: RenderableType) -> None:
        self._close_line()
        self.console.print(renderable)

    def _line(self, text: Text) -> None:
        self._print(text)

    def _stream(self, kind: Literal["text", "reasoning"], message_id: str, index: int, delta: str) -> None:
        last = self._last_index.get((kind, message_id))
        if last is not None and index <= last:
            return  # a replayed delta
        self._last_index[(kind, message_id)] = index
        if not delta:
            return  # e.g. the empty closing delta: nothing to show (and no empty "◆ " line)
        if self._open != (kind, message_id):
            self._close_line()
            if kind == "text":
                self.console.print(Text("◆ ", style="bold blue"), end="")
            else:
                self.console.print(Text("thinking ", style="dim italic"), end="")
            self._open = (kind, message_id)
        style = "" if kind == "text" else "dim italic"
        self.console.print(Text(delta, style=style), end="", soft_wrap=True)
        if kind == "text":
            self._streamed[message_id] = self._streamed.get(message_id, "") + delta

    def _assistant(self, event: AssistantMessage) -> None:
        shown = self._streamed.pop(event.message_id, None)
        style = "red" if event.is_error else ""
        if shown is not None and event.text.startswith(shown):
            rest = event.text[len(shown) :]
            if rest:
                if self._open != ("text", event.message_id):
                    self._close_line()
                    self.console.print(Text("◆ … ", style="bold blue"), end="")
                    self._open = ("text", event.message_id)
                self.console.print(Text(rest, style=style), end="", soft_wrap=True)
            if self._open == ("text", event.message_id):
                self._close_line()
            return
        self._close_line()
        self.console.print(Text.assemble(("◆ ", "bold blue"), (event.text, style)), soft_wrap=True)

    def _tool_card(self, event: ToolCall) -> Panel:
        args = event.arguments
        command = _first(args, COMMAND_KEYS)
        body: list[RenderableType] = []
        if command:
            body.append(Text(f"$ {command}", style="bold"))
            cwd = _first(args, CWD_KEYS)
            if cwd:
                body.append(Text(f"in {cwd}", style="dim"))
        else:
            shown = {k: v for k, v in args.items() if k not in SUMMARY_KEYS}
            for key, value in list(shown.items())[:8]:
                rendered = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                if len(rendered) > 200:
                    rendered = rendered[:199] + "…"
                body.append(Text(f"{key}: {rendered}"))
            if len(shown) > 8:
                body.append(Text(f"… {len(shown) - 8} more arguments", style="dim"))
        summary = _first(args, SUMMARY_KEYS)
        return Panel(
            Group(*body) if body else Text("(no arguments)", style="dim"),
            title=Text(f"⚙ {event.name}"),
            title_align="left",
            subtitle=Text(summary) if summary else None,
            subtitle_align="left",
            border_style="cyan",
            expand=False,
        )

    def _result_card(self, event: ToolResult) -> Panel:
        output = truncate_output(event.output, self.max_output_lines)
        return Panel(
            Text(output) if output else Text("(no output)", style="dim"),
            title=Text(f"{'✗' if event.is_error else '✓'} {event.name}"),
            title_align="left",
            border_style="red" if event.is_error else "green",
            expand=False,
        )

    def _status(self, event: StatusChanged) -> None:
        if event.status == "running":
            self._line(Text("● running", style="dim green"))
        elif event.status == "idle":
            self._line(Text("○ idle", style="dim"))
        else:
            reason = f": {event.reason}" if event.reason else ""
            self._line(Text(f"✗ failed{reason}", style="bold red"))

    # -- gates ----------------------------------------------------------------------------------

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return await self._asks.run(gate.gate_id, self._ask(gate), f"terminal-ask-{gate.gate_id}")

    async def withdraw(self, gate_id: str) -> None:
        self._asks.cancel(gate_id)

    async def _ask(self, gate: GateOpened) -> GateAnswer:
        shown = visible_event(gate)  # displayed; answers are read against the gate as agy sent it
        async with self._prompt_lock:
            self._print(self._gate_card(shown))
            if self.auto_answer is not None:
                answer = self.auto_answer(gate)
                self.console.print(
                    Text(f"auto-answer → {visible(describe_answer(shown, answer))}", style="bold magenta")
                )
                return answer
            try:
                answer = await self._ask_keyboard(gate)
            except asyncio.CancelledError:
                self.console.print()
                self.console.print(Text("(gate withdrawn: this prompt is closed)", style="yellow"))
                raise
            self.console.print(Text(f"→ {visible(describe_answer(shown, answer))}", style="bold"))
            return answer

    def _gate_card(self, gate: GateOpened) -> Panel:
        body: list[RenderableType] = []
        if gate.kind == "permission":
            p = gate.permission
            what = (p.command_line or p.target or p.description or p.action) if p else ""
            body.append(Text(f"$ {what}" if what else gate.tool_name, style="bold"))
            if p is not None and p.cwd:
                body.append(Text(f"in {p.cwd}", style="dim"))
            title = Text(f"⏸ permission: {gate.tool_name or 'action'}")
        else:
            for i, question in enumerate(gate.questions):
                number = f"{i + 1}. " if len(gate.questions) > 1 else ""
                body.append(Text(f"{number}{question.question}", style="bold"))
                for n, option in enumerate(question.options, start=1):
                    body.append(Text(f"   {n}) {option.text}"))
            title = Text("? question")
        return Panel(Group(*body), title=title, title_align="left", border_style="yellow", expand=False)

    async def _ask_keyboard(self, gate: GateOpened) -> GateAnswer:
        if gate.kind == "permission":
            while True:
                line = await self._read("allow? [y/n] ")
                if line is None:
                    return GateAnswer(action="cancel", allow=False)
                if line.strip() in ("/cancel", "/decline"):
                    return GateAnswer(action="decline", allow=False)
                try:
                    return parse_answer(gate, line)
                except AnswerError:
                    self.console.print(Text("please answer y (allow) or n (deny)", style="yellow"))
        selections: list[tuple[str, ...]] = []
        for i, question in enumerate(gate.questions):
            if not question.options:
                hint = "your answer"
            elif question.multi_select:
                hint = f"1-{len(question.options)}, comma-separated for several, or type an answer"
            else:
                hint = f"1-{len(question.options)}, or type an answer"
            label = f"{i + 1}" if len(gate.questions) > 1 else ""
            while True:
                line = await self._read(f"answer{' ' + label if label else ''} ({hint}): ")
                if line is None:
                    return GateAnswer(action="cancel")
                if line.strip() in ("/cancel", "/decline"):
                    return GateAnswer(action="cancel" if line.strip() == "/cancel" else "decline")
                choice = parse_choice(question, line)
                try:
                    if choice is not None:
                        resolve_question(question, choice)
                        selections.append(choice)
                        break
                    self.console.print(Text("not a valid choice; try again", style="yellow"))
                except AnswerError as exc:
                    self.console.print(Text(f"{exc}; try again", style="yellow"))
        return parse_answer(gate, GateAnswer(selections=tuple(selections)))

    async def _read(self, prompt: str) -> str | None:
        """One line from ``input_fn`` in a thread; None at end of input.

        A read still pending from a withdrawn prompt is reused (a thread cannot be interrupted), so
        two threads never compete for the keyboard.
        """
        self.console.print(Text(prompt, style="bold yellow"), end="")
        if self._reading is None or self._reading.done():
            self._reading = self._start_read()
        reading = self._reading
        try:
            line = await asyncio.shield(reading)
        except (EOFError, KeyboardInterrupt):
            self._reading = None
            self.console.print()
            return None
        self._reading = None
        return line

    def _start_read(self) -> asyncio.Future[str]:
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
