"""Tool steps built from agy's recorded shapes: RUN_COMMAND, ASK_QUESTION, LIST_DIRECTORY, VIEW_FILE,
GENERIC, and the gate plumbing (``requestedInteraction``, ``completedInteractions``, permission grants).

The shared builders, conventions and projections are in :mod:`.steps`.
"""

from __future__ import annotations

import copy
from typing import Any

from .steps import (
    DONE,
    PENDING,
    WAITING,
    Where,
    _model_fields,
    _place,
    _set_transitions,
    now,
    settle,
    shape,
    tokens,
    tool_call,
    transition,
)


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


def invoke_subagent(
    where: Where, model: str, call: dict[str, Any], *, role: str, type_name: str
) -> dict[str, Any]:
    """INVOKE_SUBAGENT as far as public evidence shows it: the reference reads only
    ``invokeSubagent.subagents[i].{role, typeName}`` and ``results[i].conversationId``, filled as soon
    as the child exists while the step still runs (``reader.py _subagent_pairs``,
    ``_register_subagent_child``). Nothing else of the step is known: its metadata is the recorded
    GENERIC step's, and the child's prompt is in the child's own USER_INPUT."""
    step = shape("stream_generic_done")
    del step["generic"]
    step["type"] = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT"
    _tool_metadata(step, where, model, call, f"Starting subagent {role}", f"Start subagent {role}", 26)
    step["metadata"]["argumentsOrder"] = ["toolAction", "toolSummary"]
    _set_transitions(step, PENDING)
    step["invokeSubagent"] = {"subagents": [{"role": role, "typeName": type_name}], "results": []}
    return step


def generic_finish(step: dict[str, Any], result: str, render: dict[str, Any]) -> None:
    step["generic"]["result"] = {"result": result, "stepRenderInfo": render}
    settle(step, DONE)


def run_call(command: str, cwd: str) -> dict[str, Any]:
    """The planner's ``run_command`` tool call."""
    return tool_call(
        "run_command",
        {
            "CommandLine": command,
            "Cwd": cwd,
            "WaitMsBeforeAsync": 2000,
            "toolAction": f"Running {command.split()[0] if command.split() else 'the'} command",
            "toolSummary": f"Run {command}",
        },
    )


def write_call(path: str) -> tuple[dict[str, Any], str]:
    """The planner's ``write_to_file`` tool call, and the content it writes."""
    name = path.rsplit("/", 1)[-1]
    content = f"# {name}\n\nWritten by the simulator.\n"
    args = {
        "TargetFile": path,
        "CodeContent": content,
        "toolAction": f"Writing {name}",
        "toolSummary": f"Write {name}",
    }
    return tool_call("write_to_file", args), content


def write_to_file(
    where: Where, model: str, call: dict[str, Any], *, path: str, content: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """WRITE_TO_FILE (PENDING) and the file-review request it will wait on. NOT recorded: built on the
    RUN_COMMAND shape with a ``writeToFile`` body; ``fileReview`` is a guessed interaction name."""
    step = shape("run_command_waiting")
    name = path.rsplit("/", 1)[-1]
    _tool_metadata(step, where, model, call, f"Writing {name}", f"Write {name}", 30 + tokens(content))
    _set_transitions(step, PENDING)
    step["type"] = "CORTEX_STEP_TYPE_WRITE_TO_FILE"
    del step["runCommand"], step["requestedInteraction"]
    step["writeToFile"] = {"targetFileUri": f"file://{path}", "codeContent": content}
    # the stream strips metadata.toolCall: the arguments come back from the body in this order
    step["metadata"]["argumentsOrder"] = ["TargetFile", "CodeContent", "toolAction", "toolSummary"]
    diff = "".join(f"+{line}\n" for line in content.splitlines())
    return step, {"fileReview": {"targetFileUri": f"file://{path}", "diff": diff}}
