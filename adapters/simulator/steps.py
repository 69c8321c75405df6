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


def _tool_metadata(
    step: dict[str, Any],
    where: Where,
    model: str,
    call: dict[str, Any],
    action: str,
    summary: str,
    out_tokens: int,
) -> None:
    md = step["metadata"]
    stamp = now()
    for key in ("createdAt", "viewableAt", "finishedGeneratingAt", "lastCompletedChunkAt", "startedAt"):
        md[key] = stamp
    md.pop("completedAt", None)
    if "toolCall" in md:
        md["toolCall"] = call
    _model_fields(step, model)
    md["toolCallOutputTokens"] = out_tokens
    _place(step, where)
    md["toolSummary"] = summary
    md["toolAction"] = action


def _with_tool_call(step: dict[str, Any], call: dict[str, Any]) -> None:
    """Insert ``metadata.toolCall`` after ``source`` (for shapes recorded only in the stream)."""
    md = step["metadata"]
    out: dict[str, Any] = {}
    for key, value in md.items():
        out[key] = value
        if key == "source":
            out["toolCall"] = call
    step["metadata"] = out


def run_command(
    where: Where, model: str, call: dict[str, Any], *, command: str, cwd: str, action: str, summary: str
) -> dict[str, Any]:
    """RUN_COMMAND as created: PENDING, no ``requestedInteraction`` yet."""
    step = shape("run_command_waiting")
    _tool_metadata(step, where, model, call, action, summary, 30 + tokens(command))
    _set_transitions(step, PENDING)
    step["runCommand"] = {
        "commandLine": command,
        "proposedCommandLine": command,
        "cwd": cwd,
        "waitMsBeforeAsync": "2000",
        "blocking": True,
    }
    del step["requestedInteraction"]
    return step


def permission_request(command: str, action: str) -> dict[str, Any]:
    return {
        "permission": {
            "resource": {"action": "command", "target": command},
            "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
            "suggestedPersistPattern": command.split()[0] if command.split() else command,
            "actionDescription": action,
        }
    }


def ask_gate(step: dict[str, Any], request: dict[str, Any]) -> None:
    step["requestedInteraction"] = copy.deepcopy(request)
    transition(step, WAITING)


def record_interaction(step: dict[str, Any], response: dict[str, Any]) -> None:
    """Append ``completedInteractions[]`` = {request (the asked one), response (what came back)}."""
    step.setdefault("completedInteractions", []).append(
        {"request": copy.deepcopy(step["requestedInteraction"]), "response": copy.deepcopy(response)}
    )


def grant(step: dict[str, Any], allow: bool) -> None:
    resource = copy.deepcopy(step["requestedInteraction"]["permission"]["resource"])
    entry: dict[str, Any] = {"resource": resource}
    if allow:
        entry["allow"] = True
    grants = step.setdefault("permissions", {"permissionGrants": []})["permissionGrants"]
    grants.append(entry)
    # keep the recorded order: permissions before runCommand
    if "runCommand" in step:
        step["runCommand"] = step.pop("runCommand")
        for key in ("requestedInteraction", "completedInteractions"):
            if key in step:
                step[key] = step.pop(key)


def run_command_finish(step: dict[str, Any], output: str, exit_code: int = 0) -> None:
    body = step["runCommand"]
    body["exitCode"] = exit_code
    body["combinedOutput"] = {"full": output}
    body["shellName"] = "bash"
    settle(step, DONE)


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


def ask_question(
    where: Where,
    model: str,
    call: dict[str, Any],
    *,
    question: str,
    options: list[str],
    action: str,
    summary: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """ASK_QUESTION (PENDING) and the ``requestedInteraction`` it will ask."""
    step = shape("ask_question_waiting")
    _tool_metadata(step, where, model, call, action, summary, 40 + tokens(question + "".join(options)))
    _set_transitions(step, PENDING)
    questions = [
        {"question": question, "options": [{"id": str(i), "text": t} for i, t in enumerate(options, 1)]}
    ]
    step["askQuestion"] = {"questions": copy.deepcopy(questions)}
    del step["requestedInteraction"]
    return step, {"askQuestion": {"questions": questions}}


def ask_question_answer(step: dict[str, Any], responses: list[dict[str, Any]]) -> None:
    by_question = {r.get("question"): r for r in responses if isinstance(r, dict)}
    for i, q in enumerate(step["askQuestion"]["questions"]):
        answer = by_question.get(q["question"]) or (responses[i] if i < len(responses) else None)
        if not isinstance(answer, dict):
            continue
        ids = answer.get("selectedOptionIds")
        if isinstance(ids, list) and ids:
            q["selectedOptionIds"] = [str(x) for x in ids]
        if isinstance(answer.get("writeInResponse"), str) and answer["writeInResponse"]:
            q["writeInResponse"] = answer["writeInResponse"]


def list_directory(
    where: Where,
    model: str,
    call: dict[str, Any],
    *,
    path: str,
    entries: list[dict[str, Any]],
    action: str,
    summary: str,
) -> dict[str, Any]:
    step = shape("list_directory_done")
    _tool_metadata(step, where, model, call, action, summary, 38)
    _set_transitions(step, PENDING)
    step["status"] = PENDING
    step["listDirectory"] = {"directoryPathUri": f"file://{path}", "results": entries}
    return step


def view_file(
    where: Where,
    model: str,
    call: dict[str, Any],
    *,
    path: str,
    num_lines: int,
    num_bytes: int,
    action: str,
    summary: str,
) -> dict[str, Any]:
    """VIEW_FILE: recorded in the stream only; the poll twin adds toolCall + internalMetadata."""
    step = shape("stream_view_file_done")
    _with_tool_call(step, call)
    _tool_metadata(step, where, model, call, action, summary, 40)
    _set_transitions(step, PENDING)
    step["viewFile"] = {
        "absolutePathUri": f"file://{path}",
        "endLine": max(0, num_lines - 1),
        "lineRangeBytes": num_bytes,
        "numLines": num_lines,
        "numBytes": num_bytes,
    }
    return step


def generic(
    where: Where,
    model: str,
    call: dict[str, Any],
    *,
    args: dict[str, Any],
    arguments_order: list[str],
    action: str,
    summary: str,
) -> dict[str, Any]:
    """GENERIC (e.g. ``invoke_subagent``): recorded in the stream only; the poll twin adds
    internalMetadata. Its ``toolCall`` has no ``argumentsJson`` (the args are ``generic.args``)."""
    step = shape("stream_generic_done")
    _tool_metadata(step, where, model, call, action, summary, 26)
    step["metadata"]["argumentsOrder"] = arguments_order
    _set_transitions(step, PENDING)
    step["generic"] = {"args": args}
    return step


def generic_finish(step: dict[str, Any], result: str, render: dict[str, Any]) -> None:
    step["generic"]["result"] = {"result": result, "stepRenderInfo": render}
    settle(step, DONE)


# ---------------------------------------------------------------------------------------------
# Projections


def stream_projection(step: Any) -> Any:
    """What StreamAgentStateUpdates carries for a (poll-projection) step."""
    if not isinstance(step, dict):
        return step
    out = copy.deepcopy(step)
    md = out.get("metadata")
    if isinstance(md, dict):
        md.pop("internalMetadata", None)
        if out.get("type") != T + "GENERIC":
            md.pop("toolCall", None)
    body = out.get("plannerResponse")
    if isinstance(body, dict):
        for key in ("toolCalls", "response", "thinkingSignature"):
            body.pop(key, None)
    return out
