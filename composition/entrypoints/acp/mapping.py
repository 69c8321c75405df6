"""agy-harness events -> ACP ``session/update`` payloads (the SDK's schema models).

One :class:`UpdateMapper` per ACP session keeps what the client has already been shown: the text
streamed per message (so a committed message adds only what the deltas did not carry), and the tool
calls already announced (so a gate's early ``tool_call`` is followed by updates, never a second
card). Only agy's own tool names are interpreted; anything else is an ``other`` card with the raw
arguments.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

from acp import helpers as h
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UserMessageChunk,
)

from agy_harness.adapters.sinks.terminal_cards import result_lines
from agy_harness.core import code_review
from agy_harness.core.decided_line import decided_line
from agy_harness.core.display import command_view, flagged, one_line
from agy_harness.core.kinds import describe
from agy_harness.core.terminal_pointer import without_pointer
from agy_harness.core.turns import Replies, UsageTotals
from agy_harness.ports.events import (
    GATE_SET_ASIDE,
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

from . import plans

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)

#: agy's tool names (recorded ones: run_command, view_file, list_directory, ask_question, invoke_subagent)
TOOL_KINDS: dict[str, ToolKind] = {
    "run_command": "execute",
    "send_command_input": "execute",
    "command_status": "execute",
    "view_file": "read",
    "view_code_item": "read",
    "list_directory": "read",
    "list_dir": "read",
    "grep_search": "search",
    "find_by_name": "search",
    "codebase_search": "search",
    "read_url_content": "fetch",
    "search_web": "fetch",
    "write_to_file": "edit",
    "replace_file_content": "edit",
    "multi_replace_file_content": "edit",
}


def tool_kind(name: str) -> ToolKind:
    return TOOL_KINDS.get(name, "other")


def _s(args: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def tool_title(name: str, args: dict[str, Any]) -> str:
    """What the card says: agy's own summary when it gave one, else a title from the arguments."""
    summary = _s(args, "toolSummary", "toolAction")
    if summary:
        return summary
    if name == "run_command":
        command = _s(args, "CommandLine")
        return f"Run `{command}`" if command else "Run a command"
    if name == "ask_question":
        questions = args.get("questions")
        if isinstance(questions, list) and questions and isinstance(questions[0], dict):
            return str(questions[0].get("question") or "A question")
        return "A question"
    path = _s(args, "AbsolutePath", "TargetFile", "DirectoryPath", "SearchPath", "File", "Path")
    verb = {"read": "Read", "edit": "Edit", "search": "Search", "fetch": "Fetch"}.get(tool_kind(name), "")
    if name in ("list_directory", "list_dir"):
        verb = "List"
    if verb and path:
        return f"{verb} {path}"
    query = _s(args, "Query", "Url")
    if verb and query:
        return f"{verb} {query}"
    return name.replace("_", " ") or "tool"


def tool_locations(args: dict[str, Any]) -> list[ToolCallLocation] | None:
    path = _s(args, "AbsolutePath", "TargetFile", "DirectoryPath", "File")
    return [ToolCallLocation(path=path)] if path.startswith("/") else None


def edit_diffs(name: str, args: dict[str, Any]) -> list[FileEditToolCallContent]:
    """Diffs for agy's file-edit tools (argument names as agy's tool schema has them; no recording of
    an edit step exists yet, so an edit whose arguments look different gets no diff, only its output)."""
    path = _s(args, "TargetFile", "AbsolutePath")
    if not path or tool_kind(name) != "edit":
        return []
    if name == "write_to_file" and isinstance(args.get("CodeContent"), str):
        return [h.tool_diff_content(path, args["CodeContent"], None)]
    chunks = args.get("ReplacementChunks")
    if not isinstance(chunks, list):
        chunks = [args]
    out = []
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        old, new = chunk.get("TargetContent"), chunk.get("ReplacementContent")
        if isinstance(old, str) and isinstance(new, str):
            out.append(h.tool_diff_content(path, new, old))
    return out


#: the card of a gate only agy's own terminal can answer (no answer payload for it is known)
TERMINAL_ONLY = "agy waits for this in its own terminal: answer it there (this client cannot answer it)."


def text_content(text: str) -> list[ContentToolCallContent]:
    return [h.tool_content(h.text_block(text))] if text else []


@dataclass
class UpdateMapper:
    """Events of one ACP session -> ``session/update`` payloads (stateful, see the module doc)."""

    replies: Replies = field(default_factory=Replies)  # text streamed per message, until committed
    tools: dict[str, str] = field(default_factory=dict)  # tool call id -> tool name (announced)
    diffs: dict[str, list[FileEditToolCallContent]] = field(default_factory=dict)  # call id -> its diffs
    usage: UsageTotals = field(default_factory=UsageTotals)
    model: str = ""
    refused: set[str] = field(default_factory=set)  # gates not allowed: their card never shows "running"
    plan_edits: dict[str, str] = field(default_factory=dict)  # call id -> the plan artifact it edits
    #: step key -> who decided its gate (the tool call's final update says it, issue #36)
    decided: dict[str, str] = field(default_factory=dict)

    def updates(self, event: Event, *, history: bool = False) -> list[Update]:
        match event:
            case TextDelta():
                delta = self.replies.delta(event.message_id, event.index, event.delta)
                return [h.update_agent_message_text(delta)] if delta else []
            case AssistantMessage():  # only what the deltas did not carry (nothing if they diverged)
                rest = self.replies.commit(event.message_id, event.text).rest
                return [h.update_agent_message_text(rest)] if rest else []
            case ReasoningDelta():
                return [h.update_agent_thought_text(event.delta)] if event.delta else []
            case UserMessage():
                return [h.update_user_message_text(event.text)] if event.text else []
            case ToolCall():
                return [self._tool_call(event), *self._plan_written(event)]
            case ToolResult():
                return [self._tool_result(event), *self._plan_edited(event)]
            case Usage():
                self.usage.update(event)
                return []
            case GateOpened() if not event.answerable and history:  # live: the session adds its change
                card = self.gate_card(event, TERMINAL_ONLY)
                return [card] if card is not None else []
            case Notice() if not history:
                text = f"agy-harness: {event.text}"
                if event.level == "info":
                    return [h.update_agent_thought_text(text + "\n")]
                return [h.update_agent_message_text(f"\n\n> {text}\n\n")]
            case GateWithdrawn() if event.reason == GATE_SET_ASIDE and event.step_key:
                # agy refuses any answer to it (bogus or malformed): its card ends, never "running"
                self.refused.add(event.step_key)
                return [h.update_tool_call(event.step_key, status="failed")]
            case GateWithdrawn() if event.decided_by is not None and event.step_key:
                text = decided_line(event.decided_by)
                self.decided[event.step_key] = text
                while len(self.decided) > 256:
                    del self.decided[next(iter(self.decided))]
                return [h.update_tool_call(event.step_key, content=text_content(text))]
            case (
                Notice()
                | StatusChanged()
                | ModelChanged()
                | GateOpened()
                | GateWithdrawn()
                | Rotation()
                | SubagentStarted()
            ):
                return []  # turns, models and gates are the session's (sessions.py, gates.py)
            case other:
                assert_never(other)

    def gate_card(
        self,
        gate: GateOpened,
        note: str = "",
        *,
        extra: Sequence[ContentToolCallContent | FileEditToolCallContent] = (),
        locations: list[ToolCallLocation] | None = None,
    ) -> Update | None:
        """The ``tool_call`` a gate is about, announced before agy commits it (pending); ``extra``:
        the change it is about (:mod:`.changes`)."""
        call_id = gate.step_key
        if call_id in self.tools:
            return None
        name = gate.tool_name or ("ask_question" if gate.kind == "question" else "tool")
        self.tools[call_id] = name
        return h.start_tool_call(
            call_id,
            gate_title(gate),
            kind=tool_kind(name) if gate.kind == "permission" else "other",
            status="pending",
            raw_input=gate_input(gate),
            content=[*text_content(note), *extra] or None,
            locations=locations,
        )

    def _tool_call(self, event: ToolCall) -> Update:
        args = event.arguments
        title, kind = tool_title(event.name, args), tool_kind(event.name)
        diffs = edit_diffs(event.name, args)
        if diffs:
            self.diffs[event.call_id] = diffs
        if event.call_id in self.tools:
            return h.update_tool_call(
                event.call_id,
                title=title,
                kind=kind,
                status=None if event.call_id in self.refused else "in_progress",
                raw_input=args,
                content=diffs or None,
            )
        self.tools[event.call_id] = event.name
        return h.start_tool_call(
            event.call_id,
            title,
            kind=kind,
            status="in_progress",
            raw_input=args,
            content=diffs or None,
            locations=tool_locations(args),
        )

    def _tool_result(self, event: ToolResult) -> Update:
        self.tools.setdefault(event.call_id, event.name)
        content: list[ContentToolCallContent | FileEditToolCallContent] = []
        content.extend(self.diffs.pop(event.call_id, []))  # the update replaces the card's content
        content.extend(text_content(_result_text(event)))
        decided = self.decided.pop(event.step_key, "")
        content.extend(text_content(decided))  # (the update replaces the content: said again)
        return h.update_tool_call(
            event.call_id,
            status="failed" if event.is_error else "completed",
            content=content or None,
            raw_output={"output": event.output, "is_error": event.is_error},
        )

    def _plan_written(self, event: ToolCall) -> list[Update]:
        path = plans.plan_path(event.arguments) if tool_kind(event.name) == "edit" else None
        if path is None:
            return []
        code = event.arguments.get("CodeContent")
        if event.name == "write_to_file" and isinstance(code, str):
            update = plans.plan_update(code)
            return [update] if update else []
        self.plan_edits[event.call_id] = path  # an edit: the plan is the file once it is done
        return []

    def _plan_edited(self, event: ToolResult) -> list[Update]:
        path = self.plan_edits.pop(event.call_id, None)
        text = plans.read_plan(path) if path and not event.is_error else None
        update = plans.plan_update(text) if text is not None else None
        return [update] if update else []


def _result_text(event: ToolResult) -> str:
    """What a result card says: a command's output in a code block, the answer to a question (as
    the terminal shows it), else the tool's output."""
    if event.name == "run_command":
        return _fenced(event.output)
    if event.name == "ask_question":
        lines = [text for _style, text in result_lines(event, max_lines=50)]
        return "\n".join(lines)
    return event.output


COMMAND_LINES = 40  # a taller command is cut in the permission request's body (with a marker)


def shown(text: str) -> str:
    """agy-controlled text for a one-line title, by the core's one rendering rule
    (:func:`agy_harness.core.display.one_line`): controls, format and invisible characters and line
    breaks made visible, so what the human reads is what agy would run."""
    return one_line(text)


def code_span(text: str, *, visible: bool = False) -> str:
    """``text`` as one Markdown code span that its own backticks cannot close early (``visible``: it
    is already neutralised)."""
    text = text if visible else shown(text)
    longest = current = 0
    for c in text:
        current = current + 1 if c == "`" else 0
        longest = max(longest, current)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def command_content(command: str) -> list[ContentToolCallContent]:
    """The exact command, in a code block, for the permission request's body: shown by the core's
    rendering rule (every invisible character visible, blank-line runs collapsed with a count, an
    over-tall command cut with a marker), as the terminal's card shows it."""
    return text_content(_fenced("\n".join(command_view(command, COMMAND_LINES).lines)))


def code_block(text: str, max_lines: int = 200) -> str:
    """agy's text in a code block for a card's body, by the core's rendering rule (as commands), its
    look-alike flags kept; no request hash: it is no request a human approves (a diff, an output)."""
    view = command_view(text, max_lines)
    return _fenced("\n".join((*view.body, *view.flags)))


def _fenced(output: str) -> str:
    fence = "```"
    while fence in output:
        fence += "`"
    return f"{fence}\n{output.rstrip()}\n{fence}"


def gate_title(gate: GateOpened) -> str:
    if gate.kind == "other" or not gate.answerable:  # the core's card text; the card's body says
        return flagged(without_pointer(describe(gate)))  # "answer it there" (once: issue 45)
    if gate.kind == "question":
        return flagged(gate.questions[0].question) if gate.questions else "agy asks a question"
    if code_review.is_review(gate):  # agy's file-edit review
        return flagged(code_review.card_text(gate))
    p = gate.permission
    if p is None:
        return f"Allow {gate.tool_name or 'this tool'}?"
    if gate.interaction not in ("", "permission", "runCommand"):  # issue 45's kinds, in words
        return flagged(describe(gate))
    if p.command_line:  # its first line (and how many more), beside the options, as the terminal does
        # the command alone in its code span, its hash (and warnings) after it: inside, `ls #1a2b3c4d`
        # would read as a shell comment of the command
        view = command_view(p.command_line, COMMAND_LINES)
        sandbox = (
            " outside agy's sandbox (an allow here does not grant that: sandboxOverride is not sent)"
            if p.sandbox_override
            else ""
        )
        return f"Run {code_span(view.title().removesuffix(view.tail), visible=True)}{view.tail}{sandbox}"
    what = " ".join(x for x in (p.action, p.target) if x)
    return flagged(what or p.description or f"Allow {gate.tool_name or 'this tool'}?")


def gate_input(gate: GateOpened) -> dict[str, Any]:
    if gate.kind == "question":
        return {"questions": [json.loads(q.model_dump_json()) for q in gate.questions]}
    if gate.kind == "other":
        return {gate.interaction or "request": gate.request}
    return gate.permission.model_dump(exclude_defaults=True) if gate.permission else {}
