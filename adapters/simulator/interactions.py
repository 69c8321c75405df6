"""Gates on the simulator's side: answering one (``HandleCascadeUserInteraction``) and re-asking one
after a timeout. Pure functions on a :class:`.state.Cascade` and its step dicts.

Each kind's answer is taken in its descriptor's shape (:mod:`agy_harness.core.kinds`; the IDE's
descriptors) and nothing else: a field the message does not have, or a value of the wrong type, is
refused as agy's proto-JSON decoder refuses it (``invalid_argument``); an answer of another kind than
the one asked is agy's "input not registered". What proceeds is what the descriptor says proceeds:
``{confirm: true}``, ``{allow: true}``, an elicitation's ``accept``, and a deploy whose ``cancel`` is not
true -- an empty ``deploy {}`` proceeds."""

from __future__ import annotations

import copy
import json
from typing import Any

from agy_harness.core.steps import as_int

from . import steps as st
from . import tool_steps as ts
from .state import Cascade, RpcFailure

#: agy's PermissionScope values (proto-JSON enum names) an allow may carry
PERMISSION_SCOPES = frozenset(
    {
        "PERMISSION_SCOPE_UNSPECIFIED",
        "PERMISSION_SCOPE_ONCE",
        "PERMISSION_SCOPE_CONVERSATION",
        "PERMISSION_SCOPE_WORKSPACE",
        "PERMISSION_SCOPE_GLOBAL",
        "PERMISSION_SCOPE_PROJECT",
    }
)


def asked_field(step: dict[str, Any]) -> str:
    """The interaction field a waiting step asks: its ``requestedInteraction``'s key, or
    ``filePermission`` for a file permission nested in a tool step (``listDirectory.filePermissionRequest``)."""
    requested = step.get("requestedInteraction") or {}
    if requested:
        return str(next(iter(requested)))
    body = nested_file_permission(step)
    return "filePermission" if body is not None else ""


def nested_file_permission(step: dict[str, Any]) -> dict[str, Any] | None:
    for value in step.values():
        if isinstance(value, dict) and isinstance(value.get("filePermissionRequest"), dict):
            return dict(value["filePermissionRequest"])
    return None


def apply(c: Cascade, interaction: dict[str, Any], *, terminal: bool = False) -> tuple[int, dict[str, Any]]:
    """Check ``interaction`` against the gate it names and record it on the step; returns the step
    index and the recorded response. ``terminal``: agy's own terminal answers (a file permission is
    taken only from there: its RPC answer message is not evidenced, so the harness never sends one and
    the simulator refuses any). Raises RpcFailure(500, "input not registered for step N") for an
    answer to no waiting gate or of another kind than the one asked (agy's refusal), and
    RpcFailure(400, "invalid_argument") for a value agy's decoder rejects (an unknown enum name)."""
    if not isinstance(interaction, dict):
        interaction = {}
    index = as_int(interaction.get("stepIndex"))
    refused = RpcFailure(500, "unknown", f"input not registered for step {index}")
    gate = c.gates.get(index)
    if gate is None or interaction.get("trajectoryId") != c.trajectory_id or gate.future.done():
        raise refused
    step = c.steps[index]
    response: dict[str, Any] = {"trajectoryId": c.trajectory_id, "stepIndex": index}
    field = asked_field(step)
    if gate.kind == "question":
        field = "askQuestion"
    if field not in interaction or not isinstance(interaction.get(field), dict):
        raise refused  # another kind's answer (or none): agy's "input not registered"
    if gate.kind == "question":
        _question(step, interaction["askQuestion"], response)
    elif field == "permission":
        _permission(step, interaction["permission"], response)
    elif field == "runCommand":
        _run_command(step, interaction["runCommand"], response)
    elif field == "filePermission":
        _file_permission(step, interaction["filePermission"], response, refused)
    elif field in SHAPES:
        _by_shape(step, field, interaction[field], response)
    else:
        # a setting gate or the simulator's guessed fileReview (no answer is evidenced): accepted in the
        # simulated terminal, or over RPC as {<the same field>: {...}} (a guess; the harness never sends it)
        response[field] = dict(interaction[field])
        ts.record_interaction(step, response)
        st.transition(step, st.RUNNING)
    return index, response


#: each kind's answer message (the IDE's descriptors): field name -> its proto-JSON type
_CONFIRM: dict[str, type] = {"confirm": bool}
SHAPES: dict[str, dict[str, type]] = {
    **{
        name: _CONFIRM
        for name in (
            "openBrowserUrl",
            "runExtensionCode",
            "executeBrowserJavascript",
            "captureBrowserScreenshot",
            "clickBrowserPixel",
            "browserAction",
            "openBrowserSetup",
            "confirmBrowserSetup",
            "sendCommandInput",
            "readUrlContent",
            "mcp",
            "approvalInteraction",
        )
    },
    "deploy": {"cancel": bool, "deployTarget": dict, "subdomain": str},
    "elicitation": {"action": str, "contentJson": str},
    "runCommand": {
        "confirm": bool,
        "proposedCommandLine": str,
        "submittedCommandLine": str,
        "sandboxOverride": bool,
    },
    "filePermission": {"allow": bool, "scope": str, "absolutePathUri": str},
}
ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})


def check_shape(field: str, message: Any) -> None:
    """Refuse ``message`` unless it is ``field``'s answer message: known fields of their type only."""
    shape = SHAPES[field]
    if not isinstance(message, dict):
        raise RpcFailure(400, "invalid_argument", f"{field}: not a message")
    for key, value in message.items():
        if key not in shape:
            raise RpcFailure(400, "invalid_argument", f"unknown field {key!r} in {field}")
        kind = shape[key]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise RpcFailure(400, "invalid_argument", f"invalid value for {field}.{key}: {value!r}")
    if field == "elicitation" and message.get("action", "") not in ELICITATION_ACTIONS:
        raise RpcFailure(
            400,
            "invalid_argument",
            f"elicitation.action must be accept/decline/cancel: {message.get('action')!r}",
        )
    if field == "elicitation" and message.get("action") == "accept":
        try:
            content = json.loads(message.get("contentJson") or "")
        except ValueError:
            content = None
        if not isinstance(content, dict):
            raise RpcFailure(400, "invalid_argument", "elicitation accept: contentJson is not a JSON object")


def proceeds(field: str, answer: dict[str, Any]) -> bool:
    """Whether agy goes on with what it asked, given the answer it took (the descriptor's meaning)."""
    message = answer.get(field)
    if not isinstance(message, dict):
        return False
    if field == "deploy":
        return message.get("cancel") is not True  # an empty deploy {} proceeds
    if field == "elicitation":
        return message.get("action") == "accept"
    if field in ("permission", "filePermission"):
        return message.get("allow") is True
    return message.get("confirm") is True or message.get("accepted") is True


def _by_shape(step: dict[str, Any], field: str, message: Any, response: dict[str, Any]) -> None:
    check_shape(field, message)
    response[field] = copy.deepcopy(message)
    ts.record_interaction(step, response)
    if proceeds(field, response):
        st.transition(step, st.RUNNING)
    else:
        st.settle(step, st.ERROR)


def _scope(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or value not in PERMISSION_SCOPES:
        raise RpcFailure(400, "invalid_argument", f"invalid value for enum PermissionScope: {value!r}")
    return value


def _permission(step: dict[str, Any], perm: dict[str, Any], response: dict[str, Any]) -> None:
    allow = perm.get("allow") is True
    scope = _scope(perm.get("scope"))
    response["permission"] = {"allow": True} if allow else {}
    if allow and scope:
        response["permission"]["scope"] = scope  # kept as agy's proto-JSON does: the enum's name
    # "deny and tell agy why": public clients of agy's language server send it (see the table of
    # docs/conventions.md); that agy's CLI records it like this is a guess
    why = perm.get("userDenyInstruction")
    if not allow and isinstance(why, str) and why.strip():
        response["permission"]["userDenyInstruction"] = why
    ts.record_interaction(step, response)
    ts.grant(step, allow)
    if allow:
        st.transition(step, st.RUNNING)
    else:
        st.settle(step, st.ERROR)


def _run_command(step: dict[str, Any], run: dict[str, Any], response: dict[str, Any]) -> None:
    """``CascadeRunCommandInteraction {confirm, proposedCommandLine, submittedCommandLine}``: a
    confirmed submitted line is what the step then runs."""
    check_shape("runCommand", run)
    confirm = run.get("confirm") is True
    recorded: dict[str, Any] = {"confirm": True} if confirm else {}
    if confirm and run.get("sandboxOverride") is True:
        recorded["sandboxOverride"] = True
    for key in ("proposedCommandLine", "submittedCommandLine"):
        if isinstance(run.get(key), str) and run[key]:
            recorded[key] = run[key]
    response["runCommand"] = recorded
    ts.record_interaction(step, response)
    body = step.get("runCommand")
    if confirm and isinstance(body, dict) and recorded.get("submittedCommandLine"):
        body["commandLine"] = recorded["submittedCommandLine"]
    if confirm:
        st.transition(step, st.RUNNING)
    else:
        st.settle(step, st.ERROR)


def _file_permission(
    step: dict[str, Any], perm: dict[str, Any], response: dict[str, Any], refused: RpcFailure
) -> None:
    """``FilePermissionInteraction {allow, scope, absolutePathUri}`` (the IDE's descriptors): only for
    the path asked about."""
    check_shape("filePermission", perm)
    asked = (
        (step.get("requestedInteraction") or {}).get("filePermission") or nested_file_permission(step) or {}
    )
    uri = perm.get("absolutePathUri")
    if uri != asked.get("absolutePathUri"):
        raise refused
    allow = perm.get("allow") is True
    scope = _scope(perm.get("scope"))
    recorded: dict[str, Any] = {"allow": True} if allow else {}
    if allow and scope:
        recorded["scope"] = scope
    recorded["absolutePathUri"] = uri
    response["filePermission"] = recorded
    if step.get("requestedInteraction"):
        ts.record_interaction(step, response)
    else:  # nested: the request is the tool step's own spec
        step.setdefault("completedInteractions", []).append(
            {"request": {"filePermission": copy.deepcopy(asked)}, "response": copy.deepcopy(response)}
        )
    if allow:
        st.transition(step, st.RUNNING)
    else:
        st.settle(step, st.ERROR)


def _question(step: dict[str, Any], ask: dict[str, Any], response: dict[str, Any]) -> None:
    # An empty (or, proto-JSON's omitted default, absent) ``responses`` is agy's skip signal: the
    # reference harness sends it for a decline/cancel (omnigent 0.19.1
    # server/routes/_antigravity_elicitation.py, "the RPC askQuestion skip"). The step settles DONE
    # with no selection; the model is told the question was skipped.
    responses = ask.get("responses", [])
    if not isinstance(responses, list):
        raise RpcFailure(500, "unknown", f"input not registered for step {response['stepIndex']}")
    if ask.get("cancelled") is True:  # public clients' explicit skip (a guess for agy's CLI)
        responses = []
    clean = []
    for r in responses:
        if not isinstance(r, dict):
            continue
        item: dict[str, Any] = {}
        if isinstance(r.get("question"), str):
            item["question"] = r["question"]
        if isinstance(r.get("selectedOptionIds"), list) and r["selectedOptionIds"]:
            item["selectedOptionIds"] = [str(x) for x in r["selectedOptionIds"]]
        if isinstance(r.get("writeInResponse"), str) and r["writeInResponse"]:
            item["writeInResponse"] = r["writeInResponse"]
        clean.append(item)
    response["askQuestion"] = {"responses": clean} if clean else {}
    ts.record_interaction(step, response)
    ts.ask_question_answer(step, clean)
    st.transition(step, st.RUNNING)


def call_args(call: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(call.get("argumentsJson") or "{}"))


def allowed(answer: dict[str, Any]) -> bool:
    perm = answer.get("permission")
    return isinstance(perm, dict) and perm.get("allow") is True


def deny_instruction(answer: dict[str, Any]) -> str:
    """What the human told agy with a denial (``userDenyInstruction``), or ""."""
    perm = answer.get("permission")
    why = perm.get("userDenyInstruction") if isinstance(perm, dict) else None
    return why if isinstance(why, str) else ""


def metadata_index(step: dict[str, Any]) -> int:
    return int(step["metadata"]["sourceTrajectoryStepInfo"].get("metadataIndex", 0))


def reask_copy(step: dict[str, Any], where: st.Where) -> dict[str, Any]:
    """The re-asked gate: the same tool call as a new step (PENDING), at ``where``'s higher index."""
    again = copy.deepcopy(step)
    again["metadata"]["createdAt"] = again["metadata"]["viewableAt"] = st.now()
    again["metadata"]["sourceTrajectoryStepInfo"] = where.info()
    again.pop("requestedInteraction", None)
    again.pop("completedInteractions", None)
    st._set_transitions(again, st.PENDING)
    if again["type"] == st.T + "ASK_QUESTION":
        st.transition(again, st.RUNNING)
    return again


def terminal_answer(
    c: Cascade, accept: bool, *, kind: str = "other", option_ids: list[str] | None = None
) -> dict[str, Any]:
    """What agy's own terminal sends for the waiting gate of ``kind`` (KeyError: none waits).

    each kind in its descriptor's shape (a setting gate: ``{"accepted": accept}``); ``permission``: allow or deny;
    ``question``: ``option_ids`` (default the first option) for every question, or the skip."""
    for index, gate in c.gates.items():
        step = c.steps[index]
        field = asked_field(step)
        # ``other``: any kind but agy's recorded three (the harness once named them all "other")
        named = kind == "other" and field not in ("permission", "runCommand", "askQuestion", "")
        if (gate.kind != kind and not named) or gate.future.done():
            continue
        answer: dict[str, Any] = {"trajectoryId": c.trajectory_id, "stepIndex": index}
        if field == "filePermission":
            asked = (step.get("requestedInteraction") or {}).get("filePermission") or nested_file_permission(
                step
            )
            answer["filePermission"] = {
                "allow": accept,
                "absolutePathUri": (asked or {}).get("absolutePathUri"),
            }
        elif field == "deploy":
            answer["deploy"] = {} if accept else {"cancel": True}
        elif field == "elicitation":
            answer["elicitation"] = (
                {"action": "accept", "contentJson": "{}"} if accept else {"action": "decline"}
            )
        elif field in SHAPES and field != "runCommand":
            answer[field] = {"confirm": accept}
        elif kind == "other":
            answer[field] = {"accepted": accept}
        elif field == "runCommand":
            proposed = step["runCommand"]["proposedCommandLine"]
            answer["runCommand"] = {"confirm": accept, "proposedCommandLine": proposed}
        elif kind == "permission":
            answer["permission"] = {"allow": accept}
        else:
            questions = step["askQuestion"]["questions"]
            picked = option_ids or ["1"]
            responses = [{"question": q["question"], "selectedOptionIds": picked} for q in questions]
            answer["askQuestion"] = {"responses": responses if accept else []}
        return answer
    raise KeyError(f"no gate of kind {kind} is waiting")
