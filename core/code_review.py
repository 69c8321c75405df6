"""agy's file-edit review: a ``CODE_ACTION`` step agy waits on until a human accepts or rejects the
edit, as a gate every surface answers, and the ``AcknowledgeCodeActionStep`` body that answers it. Pure.

The review is not a ``CascadeUserInteraction`` (no ``RequestedInteraction`` oneof member names a code
action), so the gate uses a pseudo-interaction, :data:`FIELD` (``"codeAction"``, the step's own typed
body): a ``permission``-kind gate whose allow is *accept* and whose deny -- with a reason -- is *reject
with written feedback*. Its request (:func:`review_request`) is the file and the whole diff the card
shows; the gate's digest covers it and the step's body (:mod:`.binding`), so an answer reaches only the
review its human saw.

Evidence, and its level (every claim here is checkable on a live agy; none is recorded from agy's CLI):

* **descriptors** (jkfujinami/antigravity-client ``resource/temp_extracted/exa/language_server_pb/
  language_server.proto`` and ``.../cortex_pb/cortex.proto``, rebuilt from the Antigravity IDE's
  embedded descriptors, 2026-03): ``AcknowledgeCodeActionStepRequest {cascade_id = 1, accept = 3,
  written_feedback = 4, acknowledgement_scope = 5 (CodeAcknowledgementScope), code_acknowledgement_
  request_infos = 7}``, response empty; ``CodeAcknowledgementRequestInfo {uri_path = 1, step_indices =
  2, pre_code_actions_state = 3, post_code_actions_state = 4}``; ``CodeAcknowledgementScope {UNSPECIFIED
  = 0, FILE = 1, ALL = 2, HUNK = 3}``; ``CortexStepCodeAction.acknowledgement_type = 5``
  (``AcknowledgementType {UNSPECIFIED, ACCEPT, REJECT, STALE, CLEARED}``: an edit nobody acknowledged
  yet has none, proto-JSON leaves the default out). The two ``*_code_actions_state`` strings are not
  explained anywhere public: never sent.
* **recorded from the IDE's language server by a third party** (temur666/antigravity-web
  ``docs/_archive/ls-step-raw-fields.md``, 2026-03-03): the step's JSON --
  ``codeAction.actionResult.edit.{absoluteUri, diff.unifiedDiff.lines[{text, type}], originalContent}``,
  ``actionSpec.command.file.absoluteUri``, ``description``, ``acknowledgementType``, line types
  ``UNIFIED_DIFF_LINE_TYPE_{UNCHANGED,INSERT,DELETE}`` -- and the ``CODE_ACKNOWLEDGEMENT`` step agy
  records after a review, whose ``codeAcknowledgementInfos[].uriPath`` is a plain absolute path (so the
  request's ``uriPath`` is sent as one). ``docs/findings/260309-probe-cascade-control.md``:
  ``AcknowledgeCodeActionStep {cascadeId, accept: true}`` answered 200 ``{}`` (IDE daemon LS 1.19.6).
* **not evidenced**: that agy's CLI holds a code action ``WAITING`` for a review (the IDE's LS was seen
  taking a created file straight to ``DONE``: temur666 ``docs/changelog/260305-0745-CodeAction-
  Breakthrough.md``). A review opens here only while agy's step says it waits (``WAITING``) and the
  edit is unacknowledged; an edit agy settles by itself opens no card.

Per file: one ``CODE_ACTION`` step edits one file, so each is its own gate, answered with scope
``FILE`` for that file and that step alone. A diff that cannot be shown exactly (no lines, a line type
not known) is a named card answered only in agy's terminal (kind ``other``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from agy_harness.ports.events import GateOpened

from . import steps as S
from .display import one_line
from .steps import Step
from .verdicts import Allow, Deny, Verdict

FIELD = "codeAction"  # the pseudo-interaction (the step's typed body): agy's file-edit review
METHOD = "AcknowledgeCodeActionStep"
SCOPE_FILE = "CODE_ACKNOWLEDGEMENT_SCOPE_FILE"
#: an edit nobody acknowledged yet (proto-JSON omits the default, UNSPECIFIED)
UNACKNOWLEDGED = frozenset({"", "ACKNOWLEDGEMENT_TYPE_UNSPECIFIED"})
#: the request fields :func:`acknowledgement` sends (the descriptor's, by their proto-JSON names)
REQUEST_FIELDS = ("accept", "writtenFeedback", "acknowledgementScope", "codeAcknowledgementRequestInfos")

_MARK = {"UNCHANGED": " ", "INSERT": "+", "DELETE": "-"}


def _line_kind(value: Any) -> str:
    """``UNIFIED_DIFF_LINE_TYPE_INSERT`` -> ``INSERT`` (the IDE's names; the descriptor's
    ``UNIFIED_DIFF_CHANGE_TYPE_*`` too); "" for anything else."""
    text = S.as_str(value)
    kind = text.rsplit("_", 1)[-1] if text.startswith("UNIFIED_DIFF_") else ""
    return kind if kind in _MARK else ""


def file_uri(body: dict[str, Any]) -> str:
    """The file the edit writes: the result's URI, else the one the action names."""
    edit = S.as_dict(S.as_dict(body.get("actionResult")).get("edit"))
    spec = S.as_dict(body.get("actionSpec"))
    for uri in (
        edit.get("absoluteUri"),
        edit.get("absolutePathMigrateMeToUri"),
        S.as_dict(S.as_dict(spec.get("command")).get("file")).get("absoluteUri"),
        S.as_dict(S.as_dict(spec.get("createFile")).get("path")).get("absoluteUri"),
    ):
        if S.as_str(uri):
            return S.as_str(uri)
    return ""


def plain_path(uri: str) -> str:
    """``file:///a/b%20c.py`` -> ``/a/b c.py``; anything that is not a file URI as it is."""
    if uri.startswith("file://"):
        return unquote(urlparse(uri).path) or uri
    return uri


def review_request(step: Step) -> tuple[bool, dict[str, Any]] | None:
    """``(readable, request)`` for an unacknowledged ``CODE_ACTION`` step that names a file, whatever
    its status (the caller asks only of a WAITING one); None for anything else. ``readable``: the diff
    can be shown whole and exactly (at least one line; each of a known type, its text one line or
    absent, proto-JSON's empty string). The request: the
    file (``uri`` as agy gave it, ``path`` plain), the unified ``diff`` text, the ``oldText`` /
    ``newText`` it describes (``oldText`` None for a file the edit creates), whether the edit
    ``creates`` the file, and agy's ``description``."""
    if step.type != "CODE_ACTION":
        return None
    body = step.body
    if S.as_str(body.get("acknowledgementType")) not in UNACKNOWLEDGED:
        return None
    uri = file_uri(body)
    if not uri:
        return None  # no file named: nothing a human could review
    edit = S.as_dict(S.as_dict(body.get("actionResult")).get("edit"))
    lines = S.as_list(S.as_dict(S.as_dict(edit.get("diff")).get("unifiedDiff")).get("lines"))
    diff, old, new = [], [], []
    readable = bool(lines)
    for raw in lines:
        line = S.as_dict(raw)
        kind, text = _line_kind(line.get("type")), line.get("text", "")  # (proto-JSON omits "")
        if not kind or not isinstance(text, str) or "\n" in text:  # not one line of a known kind
            readable = False
            kind, text = kind or "UNCHANGED", S.as_str(text)
        diff.append(_MARK[kind] + text)
        if kind != "INSERT":
            old.append(text)
        if kind != "DELETE":
            new.append(text)
    spec = S.as_dict(body.get("actionSpec"))
    creates = edit.get("createFile") is True or isinstance(spec.get("createFile"), dict)
    command = S.as_dict(spec.get("command"))
    request: dict[str, Any] = {
        "uri": uri,
        "path": plain_path(uri),
        "diff": "\n".join(diff),
        "oldText": None if creates else "\n".join(old),
        "newText": "\n".join(new),
        "creates": creates,
        "description": S.as_str(body.get("description")) or S.as_str(command.get("instruction")),
    }
    return readable, request


def outcome(step: Step) -> tuple[str, bool] | None:
    """What became of a reviewed edit, once agy recorded the review on its settled step: ``(text,
    rejected)`` for ``acknowledgementType`` ACCEPT / REJECT (a rejected edit's card ends failed, as a
    denied command's); None for any other step."""
    if step.type != "CODE_ACTION" or step.status != "DONE":
        return None
    kind = S.as_str(step.body.get("acknowledgementType")).removeprefix("ACKNOWLEDGEMENT_TYPE_")
    if kind not in ("ACCEPT", "REJECT"):
        return None
    path = plain_path(file_uri(step.body)) or "the file"
    if kind == "ACCEPT":
        return f"the edit of {path} was accepted", False
    return f"the edit of {path} was rejected", True


def is_review(gate: GateOpened) -> bool:
    return gate.interaction == FIELD


def diff_text(gate: GateOpened) -> str:
    """The whole diff the card shows (and an accept approves): one line per diff line, marked
    ``+`` / ``-`` / space."""
    return S.as_str(gate.request.get("diff"))


def card_text(gate: GateOpened) -> str:
    """The one-line card text: "agy asks to edit ~/proj/a.py (accept or reject its diff)"."""
    path = S.as_str(gate.request.get("path")) or "a file"
    verb = "create" if gate.request.get("creates") is True else "edit"
    if not gate.answerable or gate.kind == "other":
        return (
            f"agy asks to {verb} {one_line(path)} (its diff cannot be shown here) — answer in agy's terminal"
        )
    return f"agy asks to {verb} {one_line(path)} (accept or reject its diff)"


def acknowledgement(gate: GateOpened, verdict: Verdict, step_index: int) -> dict[str, Any]:
    """The ``AcknowledgeCodeActionStep`` fields (all but ``cascadeId``) answering ``gate`` at
    ``step_index``, from the verdict alone: only an :class:`~.answers.Allow` accepts; a denial
    rejects, with its reason as ``writtenFeedback``; scope ``FILE``, naming this file and this step."""
    accept = isinstance(verdict, Allow)
    body: dict[str, Any] = {
        "accept": accept,  # sent even when false: a reject is never an absent field
        "acknowledgementScope": SCOPE_FILE,
        "codeAcknowledgementRequestInfos": [
            {"uriPath": S.as_str(gate.request.get("path")), "stepIndices": [step_index]}
        ],
    }
    if isinstance(verdict, Deny) and verdict.reason:
        body["writtenFeedback"] = verdict.reason
    return body
