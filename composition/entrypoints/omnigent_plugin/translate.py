"""Our events -> omnigent's executor events, for one omnigent turn; per-turn usage in omnigent's terms.

=======================  ==========================================================================
our event                omnigent executor event
=======================  ==========================================================================
TextDelta                TextChunk (the delta; a committed AssistantMessage adds what was not streamed)
ReasoningDelta           ReasoningChunk ``reasoning_text`` (``reasoning_started`` for an empty opener)
ToolCall                 ToolCallRequest(name, args, metadata={call_id, internally_executed: True})
ToolResult               ToolCallComplete(SUCCESS / ERROR, result = the output) -- agy ran the tool
SubagentStarted          SubAgentStarted(child_key = the child cascade, title = its role (type))
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
from typing import Any, assert_never

from agy_harness.core.display import one_line
from agy_harness.core.turns import Replies, UsageTotals, spent
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

from .compat import (
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

__all__ = ["TurnTranslator", "UsageTotals", "turn_usage"]


def turn_usage(before: UsageTotals, after: UsageTotals, model_label: str) -> dict[str, Any] | None:
    """omnigent's ``TurnComplete.usage`` for the tokens spent between two snapshots
    (:func:`agy_harness.core.turns.spent`); None if none."""
    turn = spent(before, after)
    if not turn.any:
        return None
    usage: dict[str, Any] = {
        "input_tokens": turn.prompt,  # omnigent counts cache reads inside input
        "output_tokens": turn.output,
        "total_tokens": turn.prompt + turn.output,
        "cache_read_input_tokens": turn.cache_read,
    }
    if turn.last_prompt:
        usage["context_tokens"] = turn.last_prompt
    if model_label:
        usage["model"] = model_label
    return usage


@dataclass
class TurnTranslator:
    """Maps the events of one turn of the bound cascade (and its sub-agents) to executor events."""

    cascade_id: str
    replies: Replies = field(default_factory=Replies)  # text sent as chunks per message, until committed
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

    def _chunk(self, delta: str, *, new_reply: bool) -> list[ExecutorEvent]:
        if not delta:
            return []
        out: list[ExecutorEvent] = []
        if new_reply and self.text:
            out.append(TextChunk(text="\n\n"))  # a new reply after tool calls: keep them apart
            self.text.append("\n\n")
        self.text.append(delta)
        out.append(TextChunk(text=delta))
        return out

    def feed(self, event: Event) -> list[ExecutorEvent]:
        if event.cascade_id != self.cascade_id:
            return self._child(event)
        match event:
            case TextDelta():
                new_reply = not self.replies.streaming(event.message_id)
                delta = self.replies.delta(event.message_id, event.index, event.delta)
                return self._chunk(delta or "", new_reply=new_reply)
            case AssistantMessage():  # what the deltas did not carry (nothing if they were rewritten)
                new_reply = not self.replies.streaming(event.message_id)
                rest = self.replies.commit(event.message_id, event.text).rest
                return self._chunk(rest, new_reply=new_reply)
            case ReasoningDelta():
                if event.delta:
                    return [ReasoningChunk(delta=event.delta, event_type="reasoning_text")]
                return [ReasoningChunk(delta="", event_type="reasoning_started")] if event.started else []
            case ToolCall():
                if "subagent" in event.name.lower():
                    self.subagent_calls.add(event.call_id)
                return [
                    ToolCallRequest(
                        name=event.name,
                        args=dict(event.arguments),
                        metadata={"call_id": event.call_id, "internally_executed": True},
                    )
                ]
            case ToolResult():
                return [
                    ToolCallComplete(
                        name=event.name,
                        status=ToolCallStatus.ERROR if event.is_error else ToolCallStatus.SUCCESS,
                        result=event.output,
                        error=event.output if event.is_error else None,
                        metadata={"call_id": event.call_id},
                    )
                ]
            case SubagentStarted():
                self.children[event.child_cascade_id] = ""
                return [
                    SubAgentStarted(
                        child_key=event.child_cascade_id,
                        title=subagent_title(event),
                        task="",
                    )
                ]
            case StatusChanged(status="failed"):
                self.failed = event.reason or "agy reported the turn as failed"
                return []
            case (
                StatusChanged()
                | UserMessage()
                | Usage()
                | ModelChanged()
                | GateOpened()
                | GateWithdrawn()
                | Rotation()
                | Notice()
            ):
                return []  # the turn's boundaries, usage and gates are the conversation's
            case other:
                assert_never(other)

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


def subagent_title(event: SubagentStarted) -> str:
    """The sub-agent's row in omnigent: the role and type agy's step gives it (by the core's rendering
    rule), else its cascade."""
    role, kind = one_line(event.role.strip()), one_line(event.agent_type.strip())
    if role:
        return f"{role} ({kind})" if kind else role
    return f"agy sub-agent {event.child_cascade_id[:8]}"
