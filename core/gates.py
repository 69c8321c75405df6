"""A WAITING step as a gate: the ``gate_opened`` event (and, for a kind nobody can answer from here,
the notice that tells the human where to answer). Pure; the reconciler keeps the open/withdrawn
bookkeeping.

* ``askQuestion`` -> ``question`` (answerable), ``permission`` -> ``permission`` (answerable, with
  agy's "allow always" offer: ``persistSuggestionType`` / ``suggestedPersistPattern``).
* Every other kind whose answer message the descriptors give (:mod:`.kinds`: the ``{confirm}`` kinds,
  filePermission, deploy, elicitation, runCommand) -> ``permission``, answered through the same
  allow/deny flow: ``permission.action`` says what agy asks in words, ``target`` the exact subject
  (URL, path, server/tool, input bytes, deploy target), ``description`` what else the human must see
  (an MCP tool's arguments...); ``scopes``, the button labels and ``no_allow`` (why no allow is
  offered) per kind.
* Any other ``requestedInteraction`` field (an unknown one, the two setting gates) -> ``other``: what
  agy waits for and the raw request, not answerable here: a notice says to answer in agy's terminal,
  and the gate is withdrawn when the step leaves WAITING.
"""

from __future__ import annotations

from typing import Any

from agy_harness.ports.events import (
    Event,
    GateOpened,
    Notice,
    PermissionRequest,
    Question,
    QuestionOption,
    built,
)

from . import code_review, safejson
from . import steps as S
from .arguments import multi_select_flags
from .kind_cards import kind_subject, schema_of
from .kinds import BY_FIELD, describe, gate_kind, in_words
from .scopes import offered
from .steps import Step


def _questions(step: Step, request: dict[str, Any]) -> tuple[Question, ...]:
    flags = multi_select_flags(step)
    questions = []
    for i, q in enumerate(S.as_list(request.get("questions"))):
        q = S.as_dict(q)
        options = tuple(
            built(
                QuestionOption,
                {"id": S.as_str(o.get("id")) or str(j + 1), "text": S.as_str(o.get("text"))},
                _OPTION_SET,
            )
            for j, o in enumerate(map(S.as_dict, S.as_list(q.get("options"))))
        )
        multi = flags[i] if i < len(flags) else bool(q.get("isMultiSelect") or q.get("multiSelect"))
        values = {"question": S.as_str(q.get("question")), "options": options, "multi_select": multi}
        questions.append(built(Question, values, _QUESTION_SET))
    return tuple(questions)


def permission_request(step: Step, request: dict[str, Any], key: str = "permission") -> PermissionRequest:
    resource = S.as_dict(request.get("resource"))
    command = S.as_dict(step.raw.get("runCommand"))
    action, target = S.as_str(resource.get("action")), S.as_str(resource.get("target"))
    if key == "filePermission":  # FilePermissionInteractionSpec {absolutePathUri, isDirectory, blockReason}
        action = "directory" if request.get("isDirectory") is True else "file"
        target = S.as_str(request.get("absolutePathUri"))
    elif key == code_review.FIELD:  # agy's file-edit review: the file, and what agy says it does
        action = "create" if request.get("creates") is True else "edit"
        target = S.as_str(request.get("path"))
    elif key == "runCommand":
        action = action or "command"
        target = (
            target or S.as_str(command.get("proposedCommandLine")) or S.as_str(command.get("commandLine"))
        )
    description = S.as_str(request.get("actionDescription"))
    if key not in ("permission", "runCommand", "filePermission") and key in BY_FIELD:
        action = in_words(key)
        target, description = kind_subject(key, request, step.body)
    # runCommand's answer names agy's proposal (proposedCommandLine): the card shows that one
    first, second = (
        ("proposedCommandLine", "commandLine")
        if key == "runCommand"
        else ("commandLine", "proposedCommandLine")
    )
    values = {
        "action": action,
        "target": target,
        "description": description,
        "command_line": S.as_str(command.get(first)) or S.as_str(command.get(second)),
        "cwd": S.as_str(command.get("cwd")),
        "persist_suggestion_type": S.as_str(request.get("persistSuggestionType")),
        "suggested_persist_pattern": S.as_str(request.get("suggestedPersistPattern")),
        "sandbox_override": key == "runCommand" and command.get("sandboxOverride") is True,
    }
    return built(PermissionRequest, values, _PERMISSION_SET)


def no_allow(key: str, request: dict[str, Any], permission: PermissionRequest) -> str:
    """Why a gate of ``key`` offers no allow here ("" : it does), though its deny is offered: agy does
    not say what it would act on, it offers several deploy targets (the human picks one in agy's
    terminal), or an MCP server asks for content (given only as the answer's ``content``)."""
    kind = BY_FIELD.get(key)
    if kind is None or key in ("permission", "runCommand", "askQuestion"):
        return ""
    if key == "deploy":
        return "agy offers several deploy targets" if permission.description and not permission.target else ""
    if key == "elicitation":
        schema = schema_of(request)
        if "unreadable" in schema:
            return "the content it asks for cannot be read"
        if _dict_of(schema.get("properties")):
            return "it needs the content it asks for: accept: <JSON object>"
        return ""
    if kind.needs_subject and not permission.target:
        return "agy does not say what it would act on"
    return ""


def _dict_of(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def pending_request(step: Step) -> tuple[str, str, dict[str, Any]] | None:
    """Any pending gate: ``(kind, key, request)`` where ``key`` is the ``requestedInteraction`` field
    agy set and ``kind`` is ``question``/``permission`` for the two we can answer, else ``other``
    (a file-write review, a plan approval, ... whatever agy waits for)."""
    return asked(step) if step.status == "WAITING" else None


def asked(step: Step) -> tuple[str, str, dict[str, Any]] | None:
    """What the step asks or asked, whatever its status (agy keeps ``requestedInteraction`` on a step
    that timed out or was answered): ``(kind, key, request)`` as :func:`pending_request` gives it."""
    requested = S.as_dict(step.raw.get("requestedInteraction"))
    if isinstance(requested.get("askQuestion"), dict):
        return "question", "askQuestion", requested["askQuestion"]
    if isinstance(requested.get("permission"), dict):
        return "permission", "permission", requested["permission"]
    for key, value in requested.items():
        if value is not None:
            kind = gate_kind(key) if isinstance(value, dict) else "other"
            return kind, key, value if isinstance(value, dict) else {"value": value}
    # a file permission inside a tool step (listDirectory.filePermissionRequest...): a gate like any
    # other, of filePermission's kind (a named card: its answer message is not evidenced)
    nested = step.body.get("filePermissionRequest")
    if isinstance(nested, dict) and nested:
        return gate_kind("filePermission"), "filePermission", nested
    review = code_review.review_request(step)  # agy's file-edit review (AcknowledgeCodeActionStep)
    if review is not None:
        return ("permission" if review[0] else "other"), code_review.FIELD, review[1]
    return None


def describe_other(step: Step) -> str:
    """What the step says it is doing, in its own words (``toolSummary``), or ""."""
    return S.as_str(step.metadata.get("toolSummary")) or S.as_str(step.metadata.get("toolAction"))


def gate_events(
    step: Step,
    base: dict[str, Any],
    gate_id: str,
    pending: tuple[str, str, dict[str, Any]],
    digest: str,
    clean: bool = False,
) -> list[Event]:
    """The events opening the gate of ``step``; ``base`` carries id/cascade_id/step_key of the gate;
    ``digest`` is its request's (:func:`agy_harness.core.binding.request_digest`); ``clean``: the
    request has nothing to clean (:func:`agy_harness.core.binding.digest_and_clean` said so), so the
    event gets a copy of it as the validating constructor makes one (a new dict of the same values),
    not a cleaned deep copy."""
    kind, key, request = pending
    # built without validating again: every value below is made of the field types (as_str, int,
    # tuples of models, a fresh clean dict); ``ports.events.built``
    values: dict[str, Any] = {
        **base,
        "type": "gate_opened",
        "gate_id": gate_id,
        "kind": kind,
        "trajectory_id": step.key.trajectory_id,
        "step_index": step.key.step_index,
        "tool_name": S.tool_name(step),
        "questions": (),
        "permission": None,
        "interaction": safejson.clean_text(key),
        "request": dict(request)
        if clean
        else safejson.clean(request),  # agy's raw value: every event must encode
        "answerable": True,
        "digest": digest,
        "scopes": (),
        "editable": False,
        "turn": S.as_str(step.metadata.get("executionId")),
        "allow_label": "",
        "deny_label": "",
        "no_allow": "",
    }
    if kind == "question":
        values["questions"] = _questions(step, request)
        return [built(GateOpened, values, {*_GATE_SET, "questions"})]
    if kind == "permission":
        values["permission"] = permission_request(step, request, key)
        values["scopes"] = offered(key, request)
        values["editable"] = key == "runCommand"
        kind_of = BY_FIELD.get(key)
        if kind_of is not None:
            values["allow_label"], values["deny_label"] = kind_of.allow_label, kind_of.deny_label
        values["no_allow"] = no_allow(key, request, values["permission"])
        fields = {"permission", "scopes", "editable", "allow_label", "deny_label", "no_allow"}
        return [built(GateOpened, values, {*_GATE_SET, *fields})]
    values["kind"], values["answerable"] = "other", False
    gate = built(GateOpened, values, {*_GATE_SET, "answerable"})
    doing = describe_other(step)
    notice = Notice(
        id=f"{base['id']}/notice",
        cascade_id=base["cascade_id"],
        step_key=base.get("step_key", ""),
        level="warning",
        text=describe(gate) + (f". agy's step says: {doing}" if doing else ""),
    )
    return [gate, notice]


# model_fields_set of what is built here (as if passed to the constructor)
_OPTION_SET = {"id", "text"}
_QUESTION_SET = {"question", "options", "multi_select"}
_PERMISSION_SET = {
    "action",
    "target",
    "description",
    "command_line",
    "cwd",
    "persist_suggestion_type",
    "suggested_persist_pattern",
    "sandbox_override",
}
_GATE_SET = {
    "id",
    "cascade_id",
    "step_key",
    "gate_id",
    "kind",
    "trajectory_id",
    "step_index",
    "tool_name",
    "interaction",
    "request",
    "digest",
    "turn",
}
