"""Domain events -> omnigent 0.19.1's ``POST /v1/sessions/{id}/events`` bodies (pure).

Every body is ``{"type": ..., "data": {...}}`` as omnigent's events route reads it
(``omnigent/server/routes/sessions/routes_events.py``; items are parsed by
``_sessions/helpers.py:_parse_external_conversation_item`` into ``omnigent/entities/conversation.py``'s
item data classes):

====================  ==============================  =================================================================
event                 ``type``                        ``data``
====================  ==============================  =================================================================
UserMessage           external_conversation_item      item_type "message", item_data {role "user", content
                                                      [{type "input_text", text}]}
AssistantMessage      external_conversation_item      item_type "message", item_data {role "assistant", agent, content
                                                      [{type "output_text", text}]}, message_id (retires the live
                                                      preview its text deltas built)
ToolCall              external_conversation_item      item_type "function_call", item_data {agent, name, arguments (a
                                                      JSON string), call_id}
ToolResult            external_conversation_item      item_type "function_call_output", item_data {call_id, output}
Rotation (/clear)     external_conversation_item      item_type "error", item_data {source "harness", level "info",
                                                      code "agy_conversation_cleared", title, message}: a visible
                                                      boundary; the new agy conversation continues in this session
Notice                external_conversation_item      item_type "error", item_data {source "harness", level "info" or
                                                      "error", code "agy_harness_notice", message}
StatusChanged         external_session_status         status running|idle|failed; ``failed`` carries ``output`` (the
                                                      failure text omnigent shows)
TextDelta             external_output_text_delta      delta, message_id, index, final
ReasoningDelta        external_output_reasoning_delta delta, started
Usage                 external_session_usage          omnigent's SET totals: cumulative_input_tokens INCLUDES cache
                                                      reads (agy's input + cache reads), cumulative_output_tokens,
                                                      cumulative_cache_read_input_tokens, model (display name)
ModelChanged          external_model_change           model (display name)
GateWithdrawn         external_elicitation_resolved   elicitation_id (see gates.elicitation_id)
SubagentStarted       external_antigravity_subagent_  cascade_id (the child's), role, agent_type (what the parent's
                      start                           step names; "" if nothing), tool_call_id; the answer's
                                                      child_session_id receives the child's events
GateOpened            (not an event)                  the elicitation hook: OmnigentSink.ask
====================  ==============================  =================================================================

Every item carries ``source_id`` = the event's deterministic id (hashed when longer than omnigent's 256
characters): omnigent derives the item's id from it, so a re-delivery stores nothing twice (omnigent
ignores ``Idempotency-Key`` and never answers 409). ``response_id`` groups the items of one agy step.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, assert_never

from agy_harness.core.display import one_line
from agy_harness.core.turns import UsageTotals
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

Wire = dict[str, Any]
ModelNames = Callable[[str], str]

AGENT_NAME = "antigravity"  # the assistant/tool "agent" omnigent shows on items
ITEM = "external_conversation_item"
MAX_SOURCE_ID = 256
FAILED_TEXT = "agy reported a failure"


def digest(text: str, n: int = 32) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def source_id(event_id: str) -> str:
    """The item's dedup key: the event id, or a digest of it when it is longer than omnigent allows."""
    if 0 < len(event_id) <= MAX_SOURCE_ID and event_id.strip() == event_id:
        return event_id
    return f"agyh:{digest(event_id, 64)}"


def response_id(event: Event) -> str:
    """One response per agy step (the event's step key), deterministic."""
    return f"resp_agy_{digest(event.step_key or event.id, 24)}"


def _item(event: Event, item_type: str, item_data: dict[str, Any], **extra: Any) -> Wire:
    data: dict[str, Any] = {
        "item_type": item_type,
        "item_data": item_data,
        "source_id": source_id(event.id),
        "response_id": response_id(event),
        **extra,
    }
    return {"type": ITEM, "data": data}


def _notice_item(event: Event, *, code: str, message: str, level: str, title: str | None = None) -> Wire:
    item_data: dict[str, Any] = {
        "source": "harness",
        "code": code,
        "message": message or code,
        "level": level,
    }
    if title:
        item_data["title"] = title
    return _item(event, "error", item_data)


def same_name(model: str) -> str:
    return model


def to_wire(event: Event, *, model_names: ModelNames = same_name) -> Wire | None:
    """The omnigent body for ``event``; ``None`` for a GateOpened (asked through the hook instead).

    ``model_names`` turns agy's model ids into the display names omnigent shows.
    """
    match event:
        case UserMessage():
            return _item(
                event, "message", {"role": "user", "content": [{"type": "input_text", "text": event.text}]}
            )
        case AssistantMessage():
            content = [{"type": "output_text", "text": event.text}]
            return _item(
                event,
                "message",
                {"role": "assistant", "agent": AGENT_NAME, "content": content},
                message_id=event.message_id,
            )
        case ToolCall():
            return _item(
                event,
                "function_call",
                {
                    "agent": AGENT_NAME,
                    "name": event.name or "tool",
                    "arguments": json.dumps(event.arguments, ensure_ascii=False, default=str),
                    "call_id": event.call_id,
                },
            )
        case ToolResult():
            return _item(event, "function_call_output", {"call_id": event.call_id, "output": event.output})
        case Rotation():
            return _notice_item(
                event,
                code="agy_conversation_cleared",
                level="info",
                title="agy /clear: a new conversation starts here",
                message=(
                    f"agy's /clear started a new conversation ({event.new_cascade_id}); it continues in this "
                    f"session. Everything above belongs to the previous conversation ({event.old_cascade_id})."
                ),
            )
        case Notice():
            level = "info" if event.level == "info" else "error"
            return _notice_item(event, code="agy_harness_notice", level=level, message=event.text)
        case StatusChanged():
            data: dict[str, Any] = {"status": event.status}
            if event.status == "failed":
                data["output"] = event.reason.strip() or FAILED_TEXT
            return {"type": "external_session_status", "data": data}
        case TextDelta():
            return {
                "type": "external_output_text_delta",
                "data": {
                    "delta": event.delta,
                    "message_id": event.message_id,
                    "index": event.index,
                    "final": event.final,
                },
            }
        case ReasoningDelta():
            return {
                "type": "external_output_reasoning_delta",
                "data": {"delta": event.delta, "started": event.started},
            }
        case Usage():
            return {"type": "external_session_usage", "data": usage_data(event, model_names)}
        case ModelChanged():
            return {
                "type": "external_model_change",
                "data": {"model": model_names(event.model) or event.model},
            }
        case GateWithdrawn():
            from .gates import elicitation_id

            return {
                "type": "external_elicitation_resolved",
                "data": {"elicitation_id": elicitation_id(event.gate_id)},
            }
        case SubagentStarted():
            return {
                "type": "external_antigravity_subagent_start",
                "data": subagent_data(event),
            }
        case GateOpened():
            return None
        case other:
            assert_never(other)


def subagent_data(event: SubagentStarted) -> dict[str, Any]:
    """A sub-agent's registration: the child's cascade, the parent's call, and the role and type the
    parent's step gives it (omnigent titles the child ``<role>:<cascade>`` and labels both), shown by
    the core's rendering rule."""
    return {
        "cascade_id": event.child_cascade_id,
        "role": one_line(event.role),
        "agent_type": one_line(event.agent_type),
        "tool_call_id": event.parent_call_id,
    }


def usage_data(event: Usage, model_names: ModelNames = same_name) -> dict[str, Any]:
    """omnigent's usage semantics: its input total INCLUDES cache reads (agy's ``inputTokens`` does not)."""
    data: dict[str, Any] = {
        "cumulative_input_tokens": UsageTotals.of(event).prompt,
        "cumulative_output_tokens": event.cumulative_output_tokens,
        "cumulative_cache_read_input_tokens": event.cumulative_cache_read_input_tokens,
    }
    if event.model:
        data["model"] = model_names(event.model) or event.model
    return data
