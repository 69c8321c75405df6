"""agy's current transcript: ``<brain>/<cascadeId>/.system_generated/logs/transcript.jsonl``.

Source: agy CHANGELOG 1.2.4 (the file), 1.1.13 (rewritten in place during context compaction), as
quoted in issue #13; peer tools read the same lines. One JSON object per line::

    {"step_index": 7, "source": "...", "type": "...", "status": "...", "created_at": "...",
     "content": "...", "thinking": "...", "tool_calls": [{"name": "...", "args": "<JSON string>"}],
     "truncated_fields": ["content"],
     "input_tokens": 0, "cache_read_tokens": 0, "output_tokens": 0}     # on PLANNER_RESPONSE

There is no trajectory id and no execution id; tool args are JSON strings; a long field is cut to
``<truncated N bytes>``. What we do not know and therefore GUESS (documented in the table of
docs/conventions.md): ``type``/``status`` may or may not carry the ``CORTEX_STEP_TYPE_``/
``CORTEX_STEP_STATUS_`` prefixes (both are read); ``content`` is the user's text on a USER_INPUT, the
reply on a PLANNER_RESPONSE and the tool's output on a tool step; a tool step names its own call in
``tool_calls[0]``.

:func:`line_to_step` turns a line into a poll-projection step the core reads. The trajectory id is
:func:`placeholder_trajectory` of the cascade: the reconciler maps it to the real one as soon as it
has seen one (from the RPC), so a session that moves between the RPC and the transcript never
re-emits a step under another id (see ``core.reconciler``). :func:`step_to_line` is the simulator's
writer side.
"""

from __future__ import annotations

import json
from typing import Any

from agy_harness.core import safejson
from agy_harness.core.stamps import placeholder_trajectory
from agy_harness.core.steps import (
    STATUS_PREFIX,
    TYPE_PREFIX,
    as_dict,
    as_int,
    as_list,
    as_str,
    camel,
)

TRANSCRIPT_NAME = "transcript.jsonl"

__all__ = ["TRANSCRIPT_NAME", "is_modern_line", "line_to_step", "placeholder_trajectory", "step_to_line"]


def is_modern_line(obj: object) -> bool:
    """A line of the current format (no ``trajectory_id``; the legacy lines always carry one)."""
    return isinstance(obj, dict) and "trajectory_id" not in obj and isinstance(obj.get("type"), str)


def _tool_call(call: object, fallback_id: str) -> dict[str, Any] | None:
    call = as_dict(call)
    name = as_str(call.get("name"))
    if not name:
        return None
    args = call.get("args")
    text = args if isinstance(args, str) else json.dumps(args if args is not None else {}, ensure_ascii=False)
    return {"id": as_str(call.get("id")) or fallback_id, "name": name, "argumentsJson": text}


def line_to_step(obj: object, *, cascade_id: str = "") -> dict[str, Any] | None:
    """A current-format line as a poll-projection step; ``None`` when it is not a usable line."""
    if not isinstance(obj, dict):
        return None
    step_type = as_str(obj.get("type")).removeprefix(TYPE_PREFIX)
    step_index = as_int(obj.get("step_index"), -1)
    if not step_type or step_index < 0:
        return None
    status = as_str(obj.get("status")).removeprefix(STATUS_PREFIX) or "DONE"
    content = as_str(obj.get("content"))
    trajectory = placeholder_trajectory(cascade_id)
    metadata: dict[str, Any] = {"sourceTrajectoryStepInfo": {"trajectoryId": trajectory}}
    info = metadata["sourceTrajectoryStepInfo"]
    if step_type != "USER_INPUT":
        info["stepIndex"] = step_index
    if cascade_id:
        info["cascadeId"] = cascade_id
    created = as_str(obj.get("created_at"))
    if created:
        metadata["createdAt"] = created
    if as_str(obj.get("source")):
        metadata["source"] = as_str(obj.get("source"))
    truncated = [as_str(f) for f in as_list(obj.get("truncated_fields")) if as_str(f)]
    if truncated:
        metadata["transcriptTruncatedFields"] = truncated
    calls = [
        c
        for i, raw in enumerate(as_list(obj.get("tool_calls")))
        if (c := _tool_call(raw, f"t{step_index}.{i}"))
    ]
    step: dict[str, Any] = {
        "type": TYPE_PREFIX + step_type,
        "status": STATUS_PREFIX + status,
        "metadata": metadata,
    }
    if step_type == "USER_INPUT":
        step["userInput"] = {"items": [{"text": content}], "userResponse": content}
        if not created:
            return None  # no id to tell turns apart: the core would drop it anyway
    elif step_type == "PLANNER_RESPONSE":
        body: dict[str, Any] = {}
        if content:
            body["response"] = body["modifiedResponse"] = content
        if as_str(obj.get("thinking")):
            body["thinking"] = as_str(obj.get("thinking"))
        if calls:
            body["toolCalls"] = calls
        step["plannerResponse"] = body
        usage = {
            "inputTokens": obj.get("input_tokens"),
            "outputTokens": obj.get("output_tokens"),
            "cacheReadTokens": obj.get("cache_read_tokens"),
        }
        usage = {k: str(as_int(v)) for k, v in usage.items() if v is not None}
        if usage:
            metadata["modelUsage"] = usage
    elif calls:  # a tool step: its call, and its output as the result
        metadata["toolCall"] = calls[0]
        if step_type == "RUN_COMMAND":
            args = as_dict(_json(calls[0]["argumentsJson"]))
            command: dict[str, Any] = {"commandLine": as_str(args.get("CommandLine"))}
            if content:
                command["combinedOutput"] = {"full": content}
            step["runCommand"] = command
        elif content:
            step["generic"] = {"result": {"result": content}}
    else:
        step[camel(step_type)] = {"content": content} if content else {}
    return step


def _json(text: str) -> Any:
    try:
        return safejson.loads(text)
    except ValueError:
        return None


def step_to_line(step: object) -> dict[str, Any] | None:
    """A poll-projection step as a current-format line (the simulator's writer); None if no step."""
    if not isinstance(step, dict):
        return None
    step_type = as_str(step.get("type")).removeprefix(TYPE_PREFIX)
    if not step_type:
        return None
    metadata = as_dict(step.get("metadata"))
    info = as_dict(metadata.get("sourceTrajectoryStepInfo"))
    line: dict[str, Any] = {
        "step_index": as_int(info.get("stepIndex")),
        "source": as_str(metadata.get("source")),
        "type": step_type,
        "status": as_str(step.get("status")).removeprefix(STATUS_PREFIX),
        "created_at": as_str(metadata.get("createdAt")),
    }
    tool_call = as_dict(metadata.get("toolCall"))
    if step_type == "USER_INPUT":
        body = as_dict(step.get("userInput"))
        line["content"] = as_str(body.get("userResponse")) or "".join(
            as_str(as_dict(i).get("text")) for i in as_list(body.get("items"))
        )
    elif step_type == "PLANNER_RESPONSE":
        body = as_dict(step.get("plannerResponse"))
        line["content"] = as_str(body.get("modifiedResponse")) or as_str(body.get("response"))
        line["thinking"] = as_str(body.get("thinking"))
        line["tool_calls"] = [
            {"name": as_str(as_dict(c).get("name")), "args": as_str(as_dict(c).get("argumentsJson")) or "{}"}
            for c in as_list(body.get("toolCalls"))
        ]
        usage = as_dict(metadata.get("modelUsage"))
        line["input_tokens"] = as_int(usage.get("inputTokens"))
        line["cache_read_tokens"] = as_int(usage.get("cacheReadTokens"))
        line["output_tokens"] = as_int(usage.get("outputTokens"))
    else:
        if tool_call:
            line["tool_calls"] = [
                {
                    "name": as_str(tool_call.get("name")),
                    "args": as_str(tool_call.get("argumentsJson")) or "{}",
                }
            ]
        full = as_dict(as_dict(step.get("runCommand")).get("combinedOutput")).get("full")
        result = as_dict(as_dict(step.get("generic")).get("result")).get("result")
        line["content"] = full if isinstance(full, str) else result if isinstance(result, str) else ""
    line["truncated_fields"] = []
    return line


def truncate(line: dict[str, Any], field: str, keep: int) -> dict[str, Any]:
    """``line`` with ``field`` cut to ``keep`` characters plus agy's ``<truncated N bytes>`` marker."""
    text = as_str(line.get(field))
    if len(text) <= keep:
        return line
    cut = text[:keep]
    dropped = len(text.encode("utf-8")) - len(cut.encode("utf-8"))
    out = dict(line)
    out[field] = f"{cut}<truncated {dropped} bytes>"
    out["truncated_fields"] = [*as_list(line.get("truncated_fields")), field]
    return out
