"""Our events -> omnigent's executor events, for one omnigent turn; per-turn usage in omnigent's terms.

=======================  ==========================================================================
our event                omnigent executor event
=======================  ==========================================================================
TextDelta                TextChunk (the delta; a committed AssistantMessage adds what was not streamed)
ReasoningDelta           ReasoningChunk ``reasoning_text`` (``reasoning_started`` for an empty opener)
ToolCall                 ToolCallRequest(name, args, metadata={call_id, internally_executed: True})
ToolResult               ToolCallComplete(SUCCESS / ERROR, result = the output) -- agy ran the tool
SubagentStarted          SubAgentStarted(child_key = the child cascade)
a child's ToolCall       SubAgentToolCall
a child's idle           SubAgentCompleted(summary = the child's last reply)
Usage / ModelChanged     folded into TurnComplete.usage at the end of the turn
StatusChanged failed     ExecutorError(reason)
=======================  ==========================================================================

Usage: agy reports cumulative totals where ``inputTokens`` excludes cache reads; omnigent counts
cache reads inside ``input_tokens``. Per turn: ``input_tokens`` = delta(input) + delta(cache reads),
``cache_read_input_tokens`` = delta(cache reads), ``output_tokens`` = delta(output),
``total_tokens`` = input + output, ``context_tokens`` = the last model call's prompt (its input plus
cache reads), ``model`` = the model's display name from agy's catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omnigent.inner.executor import (
    ExecutorEvent,
    ReasoningChunk,
    SubAgentCompleted,
    SubAgentStarted,
    SubAgentToolCall,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    ToolCallStatus,
)

from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    ReasoningDelta,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)


@dataclass
class UsageTotals:
    """The conversation's cumulative totals as last reported, and the last call's prompt size."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    model: str = ""
    last_prompt: int = 0

    def update(self, event: Usage) -> None:
        step_prompt = (event.cumulative_input_tokens - self.input) + (
            event.cumulative_cache_read_input_tokens - self.cache_read
        )
        if step_prompt > 0:
            self.last_prompt = step_prompt
        self.input = event.cumulative_input_tokens
        self.output = event.cumulative_output_tokens
        self.cache_read = event.cumulative_cache_read_input_tokens
        if event.model:
            self.model = event.model

    def copy(self) -> UsageTotals:
        return UsageTotals(self.input, self.output, self.cache_read, self.model, self.last_prompt)


def turn_usage(before: UsageTotals, after: UsageTotals, model_label: str) -> dict[str, Any] | None:
    """omnigent's ``TurnComplete.usage`` for the tokens spent between two snapshots; None if none."""
    cache = max(0, after.cache_read - before.cache_read)
    inp = max(0, after.input - before.input) + cache
    out = max(0, after.output - before.output)
    if inp == 0 and out == 0:
        return None
    usage: dict[str, Any] = {
        "input_tokens": inp,
        "output_tokens": out,
        "total_tokens": inp + out,
        "cache_read_input_tokens": cache,
    }
    if after.last_prompt:
        usage["context_tokens"] = after.last_prompt
    if model_label:
        usage["model"] = model_label
    return usage


@dataclass
class TurnTranslator:
    """Maps the events of one turn of the bound cascade (and its sub-agents) to executor events."""

    cascade_id: str
    streamed: dict[str, str] = field(default_factory=dict)  # message_id -> text sent as chunks
    text: list[str] = field(default_factory=list)
    children: dict[str, str] = field(default_factory=dict)  # child cascade -> its last reply
    subagent_calls: set[str] = field(default_factory=set)  # tool calls that start a sub-agent
    finished_children: set[str] = field(default_factory=set)
    failed: str | None = None

    @property
    def awaiting_subagents(self) -> bool:
        """A sub-agent this turn started is not yet announced, or not yet done (agy lists children
        on a directory poll, so they can trail the parent's reply)."""
        return len(self.children) < len(self.subagent_calls) or bool(
            set(self.children) - self.finished_children
        )

    def _chunk(self, message_id: str, delta: str) -> list[ExecutorEvent]:
        if not delta:
            return []
        out: list[ExecutorEvent] = []
        if message_id not in self.streamed and self.text:
            out.append(TextChunk(text="\n\n"))  # a new reply after tool calls: keep them apart
            self.text.append("\n\n")
        self.streamed[message_id] = self.streamed.get(message_id, "") + delta
        self.text.append(delta)
        out.append(TextChunk(text=delta))
        return out

    def feed(self, event: Event) -> list[ExecutorEvent]:
        if event.cascade_id != self.cascade_id:
            return self._child(event)
        if isinstance(event, TextDelta):
            return self._chunk(event.message_id, event.delta)
        if isinstance(event, AssistantMessage):
            sent = self.streamed.get(event.message_id, "")
            if event.text.startswith(sent):
                return self._chunk(event.message_id, event.text[len(sent) :])
            return []  # the streamed text already stands for it (it was rewritten while streaming)
        if isinstance(event, ReasoningDelta):
            if event.delta:
                return [ReasoningChunk(delta=event.delta, event_type="reasoning_text")]
            return [ReasoningChunk(delta="", event_type="reasoning_started")] if event.started else []
        if isinstance(event, ToolCall):
            if "subagent" in event.name.lower():
                self.subagent_calls.add(event.call_id)
            return [
                ToolCallRequest(
                    name=event.name,
                    args=dict(event.arguments),
                    metadata={"call_id": event.call_id, "internally_executed": True},
                )
            ]
        if isinstance(event, ToolResult):
            return [
                ToolCallComplete(
                    name=event.name,
                    status=ToolCallStatus.ERROR if event.is_error else ToolCallStatus.SUCCESS,
                    result=event.output,
                    error=event.output if event.is_error else None,
                    metadata={"call_id": event.call_id},
                )
            ]
        if isinstance(event, SubagentStarted):
            self.children[event.child_cascade_id] = ""
            return [
                SubAgentStarted(
                    child_key=event.child_cascade_id,
                    title=f"agy sub-agent {event.child_cascade_id[:8]}",
                    task="",
                )
            ]
        if isinstance(event, StatusChanged) and event.status == "failed":
            self.failed = event.reason or "agy reported the turn as failed"
        return []

    def _child(self, event: Event) -> list[ExecutorEvent]:
        child = event.cascade_id
        if child not in self.children:
            return []
        if isinstance(event, ToolCall):
            return [
                SubAgentToolCall(
                    child_key=child, call_id=event.call_id, name=event.name, args=dict(event.arguments)
                )
            ]
        if isinstance(event, AssistantMessage):
            self.children[child] = event.text
        if isinstance(event, StatusChanged) and event.status in ("idle", "failed"):
            if child in self.finished_children:
                return []
            self.finished_children.add(child)
            return [
                SubAgentCompleted(child_key=child, ok=event.status == "idle", summary=self.children[child])
            ]
        return []
