"""omnigent 0.19.1's own rules for the events the omnigent sink sends (:func:`real_rules`): what the
FAKE omnigent of omnigent_app.py accepts and refuses. ``tests/omnigent_real/test_fake_contract.py``
proves they answer every body the sink sends, and a set of malformed ones, the way the real server
does."""

from __future__ import annotations

from typing import Any

ITEM_TYPES = {"message", "function_call", "function_call_output", "error", "reasoning"}
EVENT_TYPES = {
    "external_conversation_item",
    "external_session_status",
    "subagent.status",
    "external_output_text_delta",
    "external_output_reasoning_delta",
    "external_session_usage",
    "external_model_change",
    "external_elicitation_resolved",
    "external_antigravity_subagent_start",
    "approval",
}
_ITEM_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "function_call": {"agent": str, "name": str, "arguments": str, "call_id": str},
    "function_call_output": {"call_id": str, "output": str},
    "error": {"source": str, "code": str, "message": str},
}


def _item_refusal(data: dict[str, Any]) -> str | None:
    item_type, item = data.get("item_type"), data.get("item_data")
    if item_type not in ITEM_TYPES:
        return "external_conversation_item requires known data.item_type"
    if not isinstance(item, dict):
        return "external_conversation_item requires object data.item_data"
    sid = data.get("source_id")
    if sid is not None and (not isinstance(sid, str) or not sid.strip() or len(sid) > 256):
        return "data.source_id must be a non-empty string of at most 256 characters"
    for key in ("response_id", "message_id"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            return f"data.{key} must be a non-empty string"
    if item_type == "message":
        content = item.get("content")
        if item.get("role") not in ("user", "assistant") or not isinstance(content, list):
            return "message needs role user|assistant and a content list"
        if item["role"] == "assistant" and not isinstance(item.get("agent"), str):
            return "assistant messages require 'agent'"
        return None
    for key, kind in _ITEM_FIELDS.get(item_type, {}).items():
        if not isinstance(item.get(key), kind) or (
            item_type == "error" and key != "source" and not item[key]
        ):
            return f"{item_type} needs {key}"
    if item_type == "error" and item.get("source") not in ("llm", "execution", "tool", "harness"):
        return "error source must be llm|execution|tool|harness"
    if item_type == "error" and item.get("level") not in (None, "error", "info"):
        return "error level must be error|info"
    return None


def real_rules(body: Any) -> tuple[int, str] | None:
    """(status, why) omnigent 0.19.1 refuses ``body`` with, or None when it accepts it (the subset of
    its events route the omnigent sink uses)."""
    if not (
        isinstance(body, dict) and isinstance(body.get("type"), str) and isinstance(body.get("data"), dict)
    ):
        return 422, "want {type, data}"
    kind, data = body["type"], body["data"]
    if kind not in EVENT_TYPES:
        return 400, f"Unknown event type: {kind!r}"
    why: str | None = None
    if kind == "external_conversation_item":
        why = _item_refusal(data)
    elif kind == "external_session_status":
        if data.get("status") not in ("idle", "running", "waiting", "failed"):
            why = "external_session_status requires data.status in idle|running|waiting|failed"
    elif kind == "subagent.status":
        why = None if data.get("idle") is True else "subagent.status requires data.idle to be true"
    elif kind in ("external_output_text_delta", "external_output_reasoning_delta"):
        why = None if isinstance(data.get("delta"), str) else f"{kind} requires string data.delta"
    elif kind == "external_session_usage":
        keys = ("context_tokens", "context_window", "cumulative_input_tokens", "cumulative_output_tokens")
        if not any(data.get(k) is not None for k in keys):
            why = "external_session_usage requires a usage field"
        elif any(
            data.get(k) is not None
            and (not isinstance(data[k], int) or isinstance(data[k], bool) or data[k] < 0)
            for k in (*keys[2:], "cumulative_cache_read_input_tokens")
        ):
            why = "cumulative usage fields must be non-negative ints"
    elif kind == "external_model_change":
        model = data.get("model")
        why = (
            None if isinstance(model, str) and model.strip() else "external_model_change requires data.model"
        )
    elif kind == "external_elicitation_resolved":
        why = (
            None
            if isinstance(data.get("elicitation_id"), str) and data["elicitation_id"]
            else "needs elicitation_id"
        )
    elif kind == "external_antigravity_subagent_start":
        why = (
            None
            if isinstance(data.get("cascade_id"), str) and data["cascade_id"]
            else "needs data.cascade_id"
        )
    return None if why is None else (400, why)
