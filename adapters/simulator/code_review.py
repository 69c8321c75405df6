"""agy's file-edit review in the simulator: a ``CODE_ACTION`` step that waits until a human accepts or
rejects its diff, answered by ``AcknowledgeCodeActionStep`` in the descriptor's shape and no other.

Keyword ``edit the file <path>`` / ``edit a file <path>`` (:mod:`.scenarios`): a planner call
(``replace_file_content``), then the CODE_ACTION step (WAITING, no ``acknowledgementType``) whose body
is the IDE's recorded JSON (temur666/antigravity-web ``docs/_archive/ls-step-raw-fields.md``):
``actionSpec.command {instruction, replacementChunks, isEdit, file.absoluteUri}``, ``actionResult.edit
{absoluteUri, diff.unifiedDiff.lines[{text, type}], originalContent}``, ``description``. That agy's
CLI holds such a step WAITING is NOT recorded (see :mod:`agy_harness.core.code_review`).

Accepted: the step settles DONE with ``acknowledgementType: ACKNOWLEDGEMENT_TYPE_ACCEPT`` and the file
holds the new text (``Simulator.files``: what the user finds on disk; nothing is written); rejected:
``..._REJECT`` and the file keeps its old text; either way a ``CODE_ACKNOWLEDGEMENT`` step records the
review (``isAccept``, ``writtenFeedback``, ``acknowledgementScope``, ``codeAcknowledgementInfos``) and
the final reply says what happened (and repeats the written feedback).

What the simulator takes (:func:`check`): ``{cascadeId, accept, writtenFeedback, acknowledgementScope:
"CODE_ACKNOWLEDGEMENT_SCOPE_FILE", codeAcknowledgementRequestInfos: [{uriPath: <the file's plain
path>, stepIndices: [<the waiting step>]}]}``. Refused: an unknown field or a wrong type (400
``invalid_argument``, as agy's proto-JSON decoder), another scope, or infos that name no waiting
review of that file (500 ``no unacknowledged steps for file ...``, agy's words for a code edit with
nothing to acknowledge: temur666 ``docs/findings/260309-probe-cascade-control.md``).
"""

from __future__ import annotations

import copy
import difflib
from typing import TYPE_CHECKING, Any

from . import steps as st
from .state import Cascade, RpcFailure
from .tool_steps import _tool_metadata

if TYPE_CHECKING:
    from .scenarios import Action

SCOPES = frozenset(
    {
        "CODE_ACKNOWLEDGEMENT_SCOPE_UNSPECIFIED",
        "CODE_ACKNOWLEDGEMENT_SCOPE_FILE",
        "CODE_ACKNOWLEDGEMENT_SCOPE_ALL",
        "CODE_ACKNOWLEDGEMENT_SCOPE_HUNK",
    }
)
FILE = "CODE_ACKNOWLEDGEMENT_SCOPE_FILE"
REQUEST_KEYS = frozenset(
    {"cascadeId", "accept", "writtenFeedback", "acknowledgementScope", "codeAcknowledgementRequestInfos"}
)
INFO_KEYS = frozenset({"uriPath", "stepIndices", "preCodeActionsState", "postCodeActionsState"})
GATE_KIND = "review"  # the simulator's gate kind for a waiting file-edit review

LINE = "UNIFIED_DIFF_LINE_TYPE_"


def contents(name: str) -> tuple[str, str]:
    """The file before and after agy's edit (one line changed, one added)."""
    old = f"# {name}\n\nThe old line.\nKept as it is.\n"
    new = f"# {name}\n\nThe new line.\nKept as it is.\nAn added line.\n"
    return old, new


def _line(text: str, kind: str) -> dict[str, str]:
    return {"text": text, "type": LINE + kind} if text else {"type": LINE + kind}  # proto-JSON omits ""


def unified_lines(old: str, new: str) -> list[dict[str, str]]:
    """The edit's ``unifiedDiff.lines``: the whole file, line by line (unchanged, deleted, inserted)."""
    a, b = old.splitlines(), new.splitlines()
    out: list[dict[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [_line(t, "UNCHANGED") for t in a[i1:i2]]
            continue
        out += [_line(t, "DELETE") for t in a[i1:i2]]
        out += [_line(t, "INSERT") for t in b[j1:j2]]
    return out


def edit_call(path: str, old: str, new: str) -> dict[str, Any]:
    name = path.rsplit("/", 1)[-1]
    args = {
        "TargetFile": path,
        "ReplacementChunks": [{"TargetContent": old, "ReplacementContent": new}],
        "toolAction": f"Editing {name}",
        "toolSummary": f"Edit {name}",
    }
    return st.tool_call("replace_file_content", args)


def code_action(
    where: st.Where, model: str, call: dict[str, Any], *, path: str, old: str, new: str
) -> dict[str, Any]:
    """The CODE_ACTION step (PENDING) proposing ``old`` -> ``new`` in ``path``."""
    step = st.shape("run_command_waiting")
    name = path.rsplit("/", 1)[-1]
    _tool_metadata(step, where, model, call, f"Editing {name}", f"Edit {name}", 40 + st.tokens(new))
    st._set_transitions(step, st.PENDING)
    step["type"] = st.T + "CODE_ACTION"
    del step["runCommand"], step["requestedInteraction"]
    uri = f"file://{path}"
    step["codeAction"] = {
        "actionSpec": {
            "command": {
                "instruction": f"Update {name}",
                "replacementChunks": [{"targetContent": old, "replacementContent": new}],
                "isEdit": True,
                "file": {"absoluteUri": uri},
            }
        },
        "actionResult": {
            "edit": {
                "diff": {"unifiedDiff": {"lines": unified_lines(old, new)}},
                "absoluteUri": uri,
                "originalContent": old,
            }
        },
        "description": f"Replace the old line of {name} and add a line.",
    }
    step["metadata"]["argumentsOrder"] = ["TargetFile", "ReplacementChunks", "toolAction", "toolSummary"]
    return step


def acknowledgement_step(
    where: st.Where, answer: dict[str, Any], path: str, lines: list[Any]
) -> dict[str, Any]:
    """The CODE_ACKNOWLEDGEMENT step agy records after a review (the IDE's recorded JSON)."""
    step = st.system_message(where, "")
    step.pop("systemMessage", None)
    step["type"] = st.T + "CODE_ACKNOWLEDGEMENT"
    body: dict[str, Any] = {"isAccept": answer["accept"], "acknowledgementScope": FILE}
    if answer["writtenFeedback"]:
        body["writtenFeedback"] = answer["writtenFeedback"]
    body["codeAcknowledgementInfos"] = [
        {"uriPath": path, "stepIndices": answer["stepIndices"], "diff": {"lines": copy.deepcopy(lines)}}
    ]
    step["codeAcknowledgement"] = body
    return step


def _bad(message: str) -> RpcFailure:
    return RpcFailure(400, "invalid_argument", message)


def check(c: Cascade, request: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The waiting reviews ``request`` answers, each with what it says (``accept``, ``writtenFeedback``,
    ``stepIndices``); raises :class:`RpcFailure` for any other shape (see the module doc)."""
    for key in request:
        if key not in REQUEST_KEYS:
            raise _bad(f'proto: unknown field "{key}"')
    accept = request.get("accept", False)
    feedback = request.get("writtenFeedback", "")
    scope = request.get("acknowledgementScope", "CODE_ACKNOWLEDGEMENT_SCOPE_UNSPECIFIED")
    infos = request.get("codeAcknowledgementRequestInfos", [])
    if not isinstance(accept, bool) or not isinstance(feedback, str):
        raise _bad("proto: accept is a bool, writtenFeedback a string")
    if scope not in SCOPES:
        raise _bad(f"proto: invalid value for enum CodeAcknowledgementScope: {scope!r}")
    if not isinstance(infos, list) or not all(isinstance(i, dict) for i in infos):
        raise _bad("proto: codeAcknowledgementRequestInfos is a list of messages")
    if scope != FILE:
        raise RpcFailure(500, "unknown", f"the simulator answers only {FILE} reviews, not {scope}")
    found: list[tuple[int, dict[str, Any]]] = []
    for info in infos:
        for key in info:
            if key not in INFO_KEYS:
                raise _bad(f'proto: unknown field "{key}"')
        path, indices = info.get("uriPath"), info.get("stepIndices")
        if not isinstance(path, str) or not isinstance(indices, list):
            raise _bad("proto: uriPath is a string, stepIndices a list")
        if not indices or not all(type(i) is int for i in indices):
            raise RpcFailure(500, "unknown", f"no unacknowledged steps for file {path}")
        for index in indices:
            gate = c.gates.get(index)
            if gate is None or gate.kind != GATE_KIND or gate.future.done() or _path(c.steps[index]) != path:
                raise RpcFailure(500, "unknown", f"no unacknowledged steps for file {path}")
            found.append((index, {"accept": accept, "writtenFeedback": feedback, "stepIndices": indices}))
    if not found:
        raise RpcFailure(500, "unknown", "no unacknowledged steps")
    return found


def _path(step: dict[str, Any]) -> str:
    uri = str(step.get("codeAction", {}).get("actionResult", {}).get("edit", {}).get("absoluteUri", ""))
    return uri.removeprefix("file://")


class ReviewActions:
    """The ``edit`` tool of a scripted turn (a mixin of :class:`~.engine.Engine`)."""

    if TYPE_CHECKING:
        from collections.abc import Coroutine

        from .state import EngineHost

        sim: EngineHost
        c: Cascade
        model: str
        results: list[str]

        def where(self, metadata_index: int | None = None) -> st.Where: ...
        def add(self, step: dict[str, Any]) -> int: ...
        def changed(self, index: int) -> None: ...
        def pause(self, seconds: float) -> Coroutine[Any, Any, None]: ...
        def planner_tools(self, calls: list[dict[str, Any]], thinking: str) -> Coroutine[Any, Any, int]: ...
        def gate(
            self, step: dict[str, Any], request: dict[str, Any] | None, kind: str
        ) -> Coroutine[Any, Any, tuple[dict[str, Any], dict[str, Any] | None]]: ...

    async def do_edit(self, action: Action) -> None:
        path = action.arg if action.arg.startswith("/") else f"{self.sim.workspace}/{action.arg}"
        name = path.rsplit("/", 1)[-1]
        old, new = contents(name)
        call = edit_call(path, old, new)
        mi = await self.planner_tools([call], f"**Editing a file**\n\nI will change {name}.")
        await self.pause(0.15)
        step = code_action(self.where(mi), self.model, call, path=path, old=old, new=new)
        self.add(step)
        step, answer = await self.gate(step, None, GATE_KIND)
        if answer is None:
            self.results.append(f"Nobody reviewed the edit to {name} in time, so it was not applied.")
            return
        accepted = answer["accept"] is True
        step["codeAction"]["acknowledgementType"] = "ACKNOWLEDGEMENT_TYPE_" + (
            "ACCEPT" if accepted else "REJECT"
        )
        st.settle(step, st.DONE)
        self.changed(self.c.steps.index(step))
        self.sim.files[path] = new if accepted else old
        lines = step["codeAction"]["actionResult"]["edit"]["diff"]["unifiedDiff"]["lines"]
        self.add(acknowledgement_step(self.where(), answer, path, lines))
        if accepted:
            self.results.append(f"I applied the edit to {name}.")
            return
        why = answer["writtenFeedback"]
        self.results.append(
            f"You rejected the edit to {name}, so it was not applied" + (f"; you said: {why}" if why else ".")
        )
