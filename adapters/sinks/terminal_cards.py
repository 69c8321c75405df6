"""The terminal sink's cards: one readable box per tool call, tool result and gate.

* run_command: ``$ command``, ``in cwd``; its result: the output (head and tail kept).
* file tools: the path (and line range); edits as a diff (``write_to_file``: the new content as
  added lines; ``replace_file_content``/``multi_replace_file_content``: each chunk's old -> new).
* list_dir / view_file results: the entries / the size, not agy's JSON.
* ask_question: the question and its numbered options; its result: what was chosen.
* anything else: ``key: value`` lines, long values cut at a word boundary.

Every string here is already neutralised by the sink (:func:`.escape.visible_event`) before a card is
built; cards only lay it out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from agy_harness.adapters.sinks.edits import PATH_KEYS, edit_rows, first
from agy_harness.adapters.sinks.escape import visible_value
from agy_harness.core import code_review, safejson
from agy_harness.core.answers import carries_reason
from agy_harness.core.carriage import printed_event
from agy_harness.core.display import MARKER, command_view, label_notes, path_notes, visible
from agy_harness.core.kinds import describe, in_words
from agy_harness.core.scopes import allow_choices, deny_label, scope_label, scope_word
from agy_harness.ports.events import Event, GateOpened, ToolCall, ToolResult

#: Argument names that hold a tool's command line / working directory (agy's and common spellings).
COMMAND_KEYS = ("CommandLine", "command_line", "commandLine", "command", "cmd")
CWD_KEYS = ("Cwd", "cwd", "working_directory", "workdir")
SUMMARY_KEYS = ("toolSummary", "toolAction")
HIDDEN_KEYS = {*SUMMARY_KEYS, "WaitMsBeforeAsync", "SafeToAutoRun", "waitForPreviousTools"}
MAX_COMMAND_LINES = 12  # a taller command is cut in its card (with a marker); 80x24 keeps the prompt


def cut(text: str, limit: int) -> str:
    """``text`` shortened to about ``limit`` characters at a word boundary, marked with …"""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,") + " …"


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


def _title(symbol: str, name: str) -> Text:
    return Text(f"{symbol} {name}" if name else symbol)


def _panel(body: Sequence[RenderableType], title: Text, border: str, subtitle: str = "") -> Panel:
    return Panel(
        Group(*body) if body else Text("(nothing)", style="dim"),
        title=title,
        title_align="left",
        subtitle=Text(subtitle, style="dim") if subtitle else None,
        subtitle_align="left",
        border_style=border,
        expand=False,
    )


# ------------------------------------------------------------------------------------------ diffs

_DIFF_STYLES = {"add": "green", "del": "red", "ctx": "dim", "gap": "dim", "more": "dim"}


def edit_diff(name: str, args: dict[str, Any]) -> list[Text] | None:
    """The change an editing tool proposes, as diff lines; None when ``args`` is not an edit."""
    rows = edit_rows(args)
    return [Text(line, style=_DIFF_STYLES[kind]) for kind, line in rows] if rows else None


# ------------------------------------------------------------------------------------------ cards


def _questions(arguments: dict[str, Any]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    raw = arguments.get("questions")
    for q in raw if isinstance(raw, list) else []:
        if not isinstance(q, dict):
            continue
        options = []
        for o in q.get("options") or []:
            text = o.get("text") if isinstance(o, dict) else o
            if isinstance(text, str):
                options.append(text)
        out.append((str(q.get("question", "")), options))
    return out


def tool_card(event: ToolCall) -> Panel:
    args = event.arguments
    body: list[RenderableType] = []
    command = first(args, COMMAND_KEYS)
    path = first(args, PATH_KEYS)
    if command:
        body.append(Text(f"$ {command}", style="bold"))
        cwd = first(args, CWD_KEYS)
        if cwd:
            body.append(Text(f"in {cwd}", style="dim"))
    elif event.name == "ask_question" or "questions" in args:
        for question, options in _questions(args):
            body.append(Text(question, style="bold"))
            body.extend(Text(f"   {n}) {option}") for n, option in enumerate(options, start=1))
    elif path:
        where = path
        start, end = args.get("StartLine"), args.get("EndLine")
        if isinstance(start, int) and isinstance(end, int):
            where += f"  (lines {start}-{end})"
        body.append(Text(where, style="bold"))
        diff = edit_diff(event.name, args)
        if diff:
            body.extend(diff)
    else:
        shown = {k: v for k, v in args.items() if k not in HIDDEN_KEYS}
        for key, value in list(shown.items())[:8]:
            rendered = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            body.append(Text.assemble((f"{key}: ", "dim"), cut(rendered, 200)))
        if len(shown) > 8:
            body.append(Text(f"… {len(shown) - 8} more arguments", style="dim"))
    return _panel(body, _title("⚙", event.name), "cyan", first(args, SUMMARY_KEYS))


def _json(output: str) -> dict[str, Any] | None:
    if not output.lstrip().startswith("{"):
        return None
    try:
        value = safejson.loads(output)
    except ValueError:
        return None
    # decoding turns agy's "\u001b" escapes back into control characters: neutralised again here
    return visible_value(value) if isinstance(value, dict) else None


def result_lines(event: ToolResult, max_lines: int, raw_output: str | None = None) -> list[tuple[str, str]]:
    """A tool result as ``(style, text)`` lines: a directory's entries, a read file's size, a question's
    answer, else the output cut for a card. Plain data: the terminal and the board style it.

    ``event`` is the neutralised event; a JSON output is decoded from ``raw_output`` (agy's text,
    before neutralising: escaping first would change its JSON escapes) and neutralised once decoded."""
    data = _json(event.output if raw_output is None else raw_output)
    if data is not None and isinstance(data.get("results"), list):  # list_dir
        names = []
        for entry in data["results"]:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                names.append(entry["name"] + ("/" if entry.get("isDir") else ""))
        return [("", truncate_output("\n".join(names), max_lines)), ("dim", f"{len(names)} entries")]
    if data is not None and "numLines" in data:  # view_file
        size = f"{int(data.get('numLines', 0)):,} lines"
        if str(data.get("numBytes", "")).isdigit():
            size += f" · {int(data['numBytes']):,} bytes"
        return [("dim", f"read {size}")]
    if data is not None and isinstance(data.get("questions"), list):  # ask_question
        out: list[tuple[str, str]] = []
        for q in data["questions"]:
            if not isinstance(q, dict):
                continue
            options = {o.get("id"): o.get("text") for o in q.get("options") or [] if isinstance(o, dict)}
            chosen = [str(options.get(i, i)) for i in q.get("selectedOptionIds") or []]
            if q.get("writeInResponse"):  # the typed answer, as the core sends it and agy keeps it
                chosen.append(str(q["writeInResponse"]))
            out.append(("bold", f"→ {', '.join(chosen) if chosen else '(skipped)'}"))
        return out
    output = truncate_output(event.output, max_lines)
    return [("", output) if output else ("dim", "(no output)")]


def result_body(event: ToolResult, max_lines: int, raw_output: str | None = None) -> list[RenderableType]:
    return [Text(text, style=style) for style, text in result_lines(event, max_lines, raw_output)]


def result_card(event: ToolResult, max_lines: int, raw_output: str | None = None) -> Panel:
    return _panel(
        result_body(event, max_lines, raw_output),
        _title("✗" if event.is_error else "✓", event.name),
        "red" if event.is_error else "green",
    )


_DIFF_STYLE = {"+": "green", "-": "red"}  # a review's diff lines (core.code_review)


def gate_card(gate: GateOpened, *, keys: bool = True) -> Panel:
    """The card a gate is asked with, built from the gate as agy sent it: every field is neutralised
    here (:func:`agy_harness.core.display.visible`), and a command is shown whole at the moment of
    asking (:func:`agy_harness.core.display.command_view`: blank-line runs collapsed with a count, an
    over-tall command cut with a marker). ``keys``: the keys that answer it (a person answers)."""
    body: list[RenderableType] = []
    if gate.kind == "permission":
        p = gate.permission
        command = p.command_line if p else ""
        if code_review.is_review(gate):  # agy's file-edit review: the file, then its whole diff
            body.append(Text(visible(code_review.card_text(gate)), style="bold"))
            body.extend(Text("  " + note, style="yellow") for note in path_notes(p.target if p else ""))
            for line in command_view(code_review.diff_text(gate), MAX_COMMAND_LINES).lines:
                marker = line.startswith(MARKER) and line.endswith(MARKER)
                body.append(Text(line, style="dim italic" if marker else _DIFF_STYLE.get(line[:1], "")))
        elif command:
            view = command_view(command, MAX_COMMAND_LINES)
            for i, line in enumerate(view.lines):
                marker = line.startswith(MARKER) and line.endswith(MARKER)
                prefix = "$ " if i == 0 else "  "
                body.append(Text(prefix + line, style="dim italic" if marker else "bold"))
        else:
            if gate.interaction not in ("", "permission"):  # what agy asks, in words (core.kinds)
                body.append(Text(visible(describe(gate))))
            what = visible((p.target or p.description or p.action) if p else "")
            body.append(Text(f"$ {what}" if what else visible(gate.tool_name), style="bold"))
            if p is not None and p.target:  # a path: its look-alikes flagged (core.display.path_notes)
                body.extend(Text("  " + note, style="yellow") for note in path_notes(p.target))
        if p is not None and p.cwd:
            body.append(Text(f"in {visible(p.cwd)}", style="dim"))
            body.extend(Text("   " + note, style="yellow") for note in path_notes(p.cwd))
        if p is not None and p.description and p.description != command:
            body.append(Text(visible(p.description), style="dim"))
        if keys:  # (not when a policy answers: nobody types)
            body.extend(Text(line, style="dim") for line in choice_lines(gate))
        if gate.interaction in ("", "permission"):
            title = Text(f"⏸ permission: {visible(gate.tool_name) or 'action'}")
        else:  # the kind in words (core.kinds), never agy's raw field name
            title = Text(f"⏸ agy asks to {in_words(gate.interaction)}")
    else:
        for i, question in enumerate(gate.questions):
            number = f"{i + 1}. " if len(gate.questions) > 1 else ""
            body.append(Text(f"{number}{visible(question.question)}", style="bold"))
            body.extend(Text("   " + note, style="yellow") for note in label_notes(question.question))
            for n, option in enumerate(question.options, start=1):
                body.append(Text(f"   {n}) {visible(option.text)}"))
                body.extend(Text("      " + note, style="yellow") for note in label_notes(option.text))
        title = Text("? question")
    return Panel(Group(*body), title=title, title_align="left", border_style="yellow", expand=False)


def choice_lines(gate: GateOpened) -> list[str]:
    """How a permission is answered at the prompt: each allow the gate offers, numbered and labelled
    (:func:`agy_harness.core.scopes.scope_label`), then y / n, the reason where agy takes one, and the
    edit where the command may be edited. Never a choice the gate does not offer."""
    choices = allow_choices(gate)
    lines = [f"{n}) {scope_label(gate, scope)}" for n, scope in enumerate(choices, start=1)]
    if len(choices) > 1:
        words = " · ".join(f"'{scope_word(s)}'" for s in choices[1:])
        lines.append(f"type a number, or {words}")
    allow = scope_label(gate, "once").lower() if gate.allow_label else "allow"
    deny = deny_label(gate).lower()
    why = f": {gate.no_allow}" if gate.no_allow and gate.interaction != "elicitation" else ""
    tail = f"y {allow} · n {deny}" if choices else f"n {deny} (it cannot be allowed from here{why})"
    if gate.interaction == "elicitation":  # content only the human gives (core.content)
        tail += " · accept: <JSON object> accept with that content · cancel"
    if carries_reason(gate):  # (core.answers: agy's answer carries a reason)
        tail += " · n: <reason> deny and tell agy why"
    if gate.editable and choices:  # (an edit is an allow: none where no allow is offered)
        tail += " · edit: <command> run your edit instead"
    return [visible(line) for line in (*lines, tail)]  # (labels name agy's text: shown by the one rule)


def prompt_label(gate: GateOpened) -> str:
    """What the permission prompt repeats of the request: the command's first line (and how many
    lines it has), so the dangerous line is beside ``[y/n]`` however tall the card is."""
    p = gate.permission
    if p is None:
        return visible(gate.tool_name)
    if p.command_line:
        return command_view(p.command_line, MAX_COMMAND_LINES).prompt_label
    return visible(p.target or p.description or p.action)


_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_GATE_ID = re.compile(rf"\bgate {_UUID}(?:/[^\s:;,]+)*")
_IDS = re.compile(rf"\s*\(?{_UUID}(?:/[^\s:;,)]+)*\)?")


def humane(text: str) -> str:
    """A harness notice without internal ids ("gate 3494…/…/6 is gone" -> "the gate is gone")."""
    text = _GATE_ID.sub("the gate", text)
    return _IDS.sub("", text)


def crlf(event: Event) -> Event:
    """CRLF line ends (a command's output, agy quoting it) are line ends, and a bare ``\\r`` (a
    progress line) overwrites its line as in a terminal, not a visible ``\\r``
    (:mod:`agy_harness.core.carriage`, the board's rule too)."""
    return printed_event(event)
