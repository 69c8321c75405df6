"""Steps built from agy's recorded shapes (``shapes/*.json``, verbatim copies of the fixtures).

Every step the simulator serves starts as a deep copy of the recorded step of the same kind and
status; only ids, indices, text, timestamps and statuses are rewritten, so the field set stays the
real one (``metadata.sourceTrajectoryStepInfo``, ``executionId`` per turn, ``internalMetadata.
statusTransitions``, ``modelUsage`` as string ints, ``argumentsOrder``, ``toolAction``/``toolSummary``,
``requestedInteraction`` kept on settled steps, ``completedInteractions``, ``permissions``...).

Conventions where the recordings are silent (documented for the consumers):

* proto-JSON defaults are omitted: ``stepIndex`` 0 and ``metadataIndex`` 0 are absent, a denied
  permission is ``{"permission": {}}`` (``allow: false`` omitted). ``USER_INPUT`` never carries a
  ``stepIndex`` (identify it by ``executionId``).
* ``metadataIndex`` counts planner (model) calls on the trajectory; a tool step carries the index of
  the planner call that produced it, a CHECKPOINT the index of the next planner call.
* A planner step is created GENERATING with ``plannerResponse.thinking`` and ``modifiedResponse``
  growing; at DONE ``thinking`` is dropped, ``response``/``thinkingSignature``/``stopReason``/
  ``modelUsage`` appear (as recorded). A cancelled planner ends ``CORTEX_STEP_STATUS_CANCELED``
  with its partial ``modifiedResponse``.
* The first call on a trajectory reads no cache (``cacheReadTokens`` absent); later calls do.
* The stream projection (:func:`stream_projection`) drops ``metadata.internalMetadata``,
  ``metadata.toolCall`` (kept on GENERIC steps), ``plannerResponse.toolCalls``,
  ``plannerResponse.response`` and ``plannerResponse.thinkingSignature`` — exactly what the
  recorded ``stream_*`` steps lack compared with their poll twins.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import random
import string
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

T = "CORTEX_STEP_TYPE_"
S = "CORTEX_STEP_STATUS_"

PENDING, RUNNING, WAITING, DONE, ERROR, GENERATING, CANCELED = (
    S + x for x in ("PENDING", "RUNNING", "WAITING", "DONE", "ERROR", "GENERATING", "CANCELED")
)

SHAPE_NAMES = (
    "ask_question_done",
    "ask_question_waiting",
    "checkpoint",
    "conversation_history",
    "list_directory_done",
    "planner_response_text",
    "planner_response_tool_call_ask_question",
    "planner_response_tool_call_run_command",
    "run_command_done",
    "run_command_error",
    "run_command_waiting",
    "stream_generic_done",
    "stream_list_directory_done",
    "stream_planner_text_done",
    "stream_planner_tool_call",
    "stream_run_command_done",
    "stream_view_file_done",
    "user_input",
)


@cache
def _shape_text(name: str) -> str:
    return (
        resources.files(__package__).joinpath("shapes").joinpath(f"{name}.json").read_text(encoding="utf-8")
    )


@cache
def _shape(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(_shape_text(name))
    value.pop("_fixtureProvenance", None)
    return value


def shape(name: str) -> dict[str, Any]:
    """A fresh deep copy of the recorded step ``name`` (a file in ``shapes/``)."""
    return copy.deepcopy(_shape(name))


def now() -> str:
    """agy's timestamp format (RFC 3339, microseconds, ``Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def short_id(n: int = 8) -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=n))


def session_id() -> str:
    """agy's ``responseHeader.sessionID``: a negative int64 in 19 digits, as recorded.

    Always 19 digits: the simulator's token counts grow with the conversation's size, so an id of
    varying width made two runs of the same turns differ by a token now and then.
    """
    return "-" + str(random.randrange(10**18, 2**63))


def signature(n: int = 180) -> str:
    return base64.b64encode(os.urandom(n)).decode()


def response_id() -> str:
    return base64.urlsafe_b64encode(os.urandom(17)).decode().rstrip("=")[:23]


def compact_json(obj: Any) -> str:
    """Go's encoding/json of a map: compact, keys sorted."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def transition(step: dict[str, Any], status: str) -> None:
    """Set ``status`` and append to ``metadata.internalMetadata.statusTransitions``."""
    step["status"] = status
    internal = step["metadata"].setdefault("internalMetadata", {})
    internal.setdefault("statusTransitions", []).append({"updatedStatus": status, "timestamp": now()})


def _set_transitions(step: dict[str, Any], *statuses: str) -> None:
    step["metadata"]["internalMetadata"] = {"statusTransitions": []}
    for status in statuses:
        transition(step, status)


@dataclass(frozen=True)
class Where:
    """Where a step lives: its cascade/trajectory, stepIndex, planner-call index and turn."""

    cascade_id: str
    trajectory_id: str
    step_index: int
    metadata_index: int
    execution_id: str

    def info(self, *, with_index: bool = True, with_metadata_index: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"trajectoryId": self.trajectory_id}
        if with_index and self.step_index:
            out["stepIndex"] = self.step_index
        if with_metadata_index and self.metadata_index:
            out["metadataIndex"] = self.metadata_index
        out["cascadeId"] = self.cascade_id
        return out


def _place(step: dict[str, Any], where: Where, **info: bool) -> None:
    md = step["metadata"]
    md["executionId"] = where.execution_id
    md["sourceTrajectoryStepInfo"] = where.info(**info)


def _model_fields(step: dict[str, Any], model: str) -> None:
    md = step["metadata"]
    md["generatorModel"] = model
    md["requestedModel"] = {"model": model}


# ---------------------------------------------------------------------------------------------
# Token usage


def model_usage(
    model: str, *, input_tokens: int, thinking: int, response: int, cache_read: int, session_id: str
) -> dict[str, Any]:
    """``metadata.modelUsage`` as agy writes it: int64 counts as strings."""
    usage: dict[str, Any] = {
        "model": model,
        "inputTokens": str(input_tokens),
        "outputTokens": str(thinking + response),
    }
    if thinking:
        usage["thinkingOutputTokens"] = str(thinking)
    usage["responseOutputTokens"] = str(response)
    if cache_read:
        usage["cacheReadTokens"] = str(cache_read)
    usage["apiProvider"] = "API_PROVIDER_GOOGLE_GEMINI"
    usage["responseHeader"] = {"sessionID": session_id}
    usage["responseId"] = response_id()
    return usage


def tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


# ---------------------------------------------------------------------------------------------
# Builders (each returns a new step dict; the engine mutates it through its lifecycle)


def user_input(where: Where, text: str, model: str, home: str) -> dict[str, Any]:
    step = shape("user_input")
    md = step["metadata"]
    md["createdAt"] = now()
    _place(step, where, with_index=False, with_metadata_index=False)
    _set_transitions(step, DONE)
    body = step["userInput"]
    body["items"] = [{"text": text}]
    body["userResponse"] = text
    planner = body["userConfig"]["plannerConfig"]
    planner["planModel"] = model
    skills = planner["customizationConfig"]["customizationDiscoveryConfig"]["skills"]
    skills["skillsPaths"] = [
        {"absolute": f"{home}/.gemini/antigravity-cli/skills"},
        {"absolute": f"{home}/.gemini/skills"},
    ]
    return step


def conversation_history(where: Where) -> dict[str, Any]:
    step = shape("conversation_history")
    md = step["metadata"]
    md["createdAt"] = md["startedAt"] = now()
    _place(step, where, with_metadata_index=False)
    _set_transitions(step, PENDING, RUNNING, DONE)
    md["completedAt"] = now()
    step["conversationHistory"] = {}
    return step


def system_message(where: Where, text: str) -> dict[str, Any]:
    """``SendAgentMessage``: not recorded; built on the CONVERSATION_HISTORY (system step) shape."""
    step = conversation_history(where)
    step["type"] = T + "SYSTEM_MESSAGE"
    del step["conversationHistory"]
    step["metadata"]["internalMetadata"]["statusTransitions"] = [{"updatedStatus": DONE, "timestamp": now()}]
    step["systemMessage"] = {"message": text}
    return step


def planner(where: Where, model: str) -> dict[str, Any]:
    """A planner step that just started GENERATING (no text yet, no usage, no ``response``)."""
    step = shape("planner_response_text")
    md = step["metadata"]
    created = now()
    for key in ("finishedGeneratingAt", "startedAt", "completedAt", "modelUsage"):
        md.pop(key, None)
    md["createdAt"] = created
    md["viewableAt"] = created
    _model_fields(step, model)
    _place(step, where)
    _set_transitions(step, GENERATING)
    step["plannerResponse"] = {"messageId": f"bot-{uuid.uuid4()}"}
    return step


def planner_grow(step: dict[str, Any], *, thinking: str, text: str) -> None:
    body = step["plannerResponse"]
    if thinking:
        body["thinking"] = thinking
    if text:
        body["modifiedResponse"] = text


def planner_done(
    step: dict[str, Any],
    usage: dict[str, Any],
    *,
    text: str = "",
    tool_calls: list[dict[str, Any]] | None = None,
) -> None:
    """Settle a planner the way the recordings show: text (response + modifiedResponse + signature)
    or tool calls (``toolCalls``, the signature inside each call)."""
    md = step["metadata"]
    stamp = now()
    md["finishedGeneratingAt"] = md["startedAt"] = md["completedAt"] = stamp
    # keep the recorded key order: modelUsage sits after source
    ordered: dict[str, Any] = {}
    for key, value in md.items():
        ordered[key] = value
        if key == "source":
            ordered["modelUsage"] = usage
    md.clear()
    md.update(ordered)
    old = step["plannerResponse"]
    body: dict[str, Any] = {}
    if tool_calls:
        body["messageId"] = old["messageId"]
        body["toolCalls"] = tool_calls
    else:
        body["response"] = text
        body["modifiedResponse"] = text
        body["thinkingSignature"] = signature()
        body["messageId"] = old["messageId"]
    body["stopReason"] = "STOP_REASON_STOP_PATTERN"
    step["plannerResponse"] = body
    transition(step, DONE)


def planner_cancel(step: dict[str, Any]) -> None:
    md = step["metadata"]
    md["finishedGeneratingAt"] = md["completedAt"] = now()
    step["plannerResponse"].pop("thinking", None)
    transition(step, CANCELED)


def checkpoint(where: Where, *, intent: str, requests: list[str], usage: dict[str, Any]) -> dict[str, Any]:
    step = shape("checkpoint")
    md = step["metadata"]
    md["createdAt"] = md["startedAt"] = now()
    md["modelUsage"] = usage
    md["retryInfos"] = [{"usage": copy.deepcopy(usage)}]
    _place(step, where)
    _set_transitions(step, PENDING, RUNNING, DONE)
    md["completedAt"] = now()
    step["checkpoint"] = {
        "intentOnly": True,
        "includedStepIndexEnd": where.step_index,
        "userIntent": intent,
        "userRequests": requests,
        "renderLatestCheckpoint": True,
        "renderUserMessageStepIndex": "0",
    }
    # keep the recorded key order of metadata
    order = list(_shape("checkpoint")["metadata"])
    step["metadata"] = {k: md[k] for k in order if k in md}
    return step


def tool_call(name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """A ``toolCall`` (as in ``plannerResponse.toolCalls`` and ``metadata.toolCall``)."""
    call: dict[str, Any] = {"id": short_id(), "name": name}
    if arguments is not None:
        call["argumentsJson"] = compact_json(arguments)
    call["thinkingSignature"] = signature()
    call["originalName"] = name
    return call


def settle(step: dict[str, Any], status: str) -> None:
    """DONE / ERROR / CANCELED with ``completedAt`` (kept in the recorded key position)."""
    md = step["metadata"]
    if status != ERROR or "completedInteractions" in step:
        out: dict[str, Any] = {}
        for key, value in md.items():
            if key == "completedAt":
                continue
            out[key] = value
            if key == "startedAt":
                out["completedAt"] = now()
        step["metadata"] = out
    transition(step, status)


# ---------------------------------------------------------------------------------------------
# Projections


def stream_projection(step: Any) -> Any:
    """What StreamAgentStateUpdates carries for a (poll-projection) step (a copy of its own)."""
    return copy.deepcopy(stream_view(step))


def stream_view(step: Any) -> Any:
    """:func:`stream_projection` without the deep copy: every value it does not change is ``step``'s
    own. For a frame that is encoded at once and never kept (copying a 4 MiB step to drop two
    keys was the simulator's own cost of every frame)."""
    if not isinstance(step, dict):
        return step
    out = dict(step)
    md = out.get("metadata")
    if isinstance(md, dict):
        md = out["metadata"] = dict(md)
        md.pop("internalMetadata", None)
        if out.get("type") != T + "GENERIC":
            md.pop("toolCall", None)
    body = out.get("plannerResponse")
    if isinstance(body, dict):
        body = out["plannerResponse"] = dict(body)
        for key in ("toolCalls", "response", "thinkingSignature"):
            body.pop(key, None)
    return out
