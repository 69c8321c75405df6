"""agy's 18 gate kinds, by name: what each asks, what a human must see, what evidence says about its
answer, and -- only where the answer message is publicly evidenced -- that it is answerable. Pure.

agy's language server defines ``CascadeUserInteraction`` with a oneof of 18 interactions (deploy=4
... approval_interaction=23; FarrelAD/ag-attention-bridge ``docs/ANTIGRAVITY_NATIVE_INTERACTION_
RESEARCH.md`` §8.1, read from the descriptors Google ships). A WAITING step names the one it waits for
in ``requestedInteraction`` under the same JSON field name (lowerCamel of the proto name); the answer
(``HandleCascadeUserInteraction``) carries the interaction under that field too.

:data:`KINDS` holds each: its number, field, what agy asks in words, the gate kind the harness makes
of it (``question`` / ``permission``: answerable; ``other``: a named card, never answered from here),
and the evidence. Answerable are exactly the three whose answer message is public:

* ``askQuestion`` -- ``{responses[{question, selectedOptionIds, writeInResponse, skipped}], cancelled}``
  (recorded from agy's CLI: ``shapes/ask_question_done.json``; descriptors §8.2-8.3);
* ``permission`` -- ``{allow, scope, userDenyInstruction, persistGrants, editedTarget}`` (recorded:
  ``shapes/run_command_done.json`` ``{allow: true}``; the rest from descriptors §12, §14);
* ``runCommand`` -- ``{confirm, proposedCommandLine, submittedCommandLine}`` (descriptors §14).

``filePermission`` (``file_permission = 19``) is a named card, not answerable: its request is evidenced
(``FilePermissionInteractionSpec {absolutePathUri, isDirectory, blockReason}``, also nested in a tool
step: sdougbrown/avenor ``internal/runtime/agy/testdata/rpc/v1.1.5/FIELD_MAP.md``,
``list_directory.file_permission_request``), its answer message is not: no public source shows it, so
no payload is guessed; the card names the path and says to answer in agy's terminal.

``deploy`` has one public answer field, ``cancel`` (avenor FIELD_MAP): what *accepts* a deploy is not
evidenced, so it stays a named card. The other twelve have names only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agy_harness.ports.events import GateOpened

from . import code_review
from .display import one_line

GateKindName = Literal["question", "permission", "other"]
Evidence = Literal["recorded", "descriptors", "none"]

RESEARCH = "FarrelAD/ag-attention-bridge docs/ANTIGRAVITY_NATIVE_INTERACTION_RESEARCH.md"
FIELD_MAP = "sdougbrown/avenor internal/runtime/agy/testdata/rpc/v1.1.5/FIELD_MAP.md"


@dataclass(frozen=True, slots=True)
class Kind:
    number: int  # the CascadeUserInteraction oneof field number
    proto: str  # the proto field name
    field: str  # agy's JSON field name (lowerCamel), in requestedInteraction and in the answer
    asks: str  # what agy asks, as a verb phrase ("open {what} in a browser"); {what} is the request's subject
    gate: GateKindName  # question / permission: answerable here; other: a named card
    evidence: Evidence  # what shows the answer message
    source: str  # where
    answer: str  # the answer message's fields ("" where none is evidenced)


def _k(
    number: int, proto: str, asks: str, gate: GateKindName, evidence: Evidence, source: str, answer: str = ""
) -> Kind:
    head, *rest = proto.split("_")
    return Kind(
        number, proto, head + "".join(p.capitalize() for p in rest), asks, gate, evidence, source, answer
    )


_NAME_ONLY = f"descriptors, name only ({RESEARCH} §8.1)"

KINDS: tuple[Kind, ...] = (
    _k(
        4,
        "deploy",
        "deploy {what}",
        "other",
        "descriptors",
        f"{FIELD_MAP}: deploy.cancel only; what accepts a deploy is not evidenced",
    ),
    _k(
        5,
        "run_command",
        "run {what}",
        "permission",
        "descriptors",
        f"{RESEARCH} §14 (CascadeRunCommandInteraction)",
        "confirm, proposedCommandLine, submittedCommandLine",
    ),
    _k(6, "open_browser_url", "open {what} in a browser", "other", "none", _NAME_ONLY),
    _k(7, "run_extension_code", "run extension code: {what}", "other", "none", _NAME_ONLY),
    _k(8, "execute_browser_javascript", "run JavaScript in the browser: {what}", "other", "none", _NAME_ONLY),
    _k(9, "capture_browser_screenshot", "capture a browser screenshot: {what}", "other", "none", _NAME_ONLY),
    _k(10, "click_browser_pixel", "click in the browser: {what}", "other", "none", _NAME_ONLY),
    _k(13, "browser_action", "act in the browser: {what}", "other", "none", _NAME_ONLY),
    _k(14, "open_browser_setup", "open the browser setup: {what}", "other", "none", _NAME_ONLY),
    _k(15, "confirm_browser_setup", "confirm the browser setup: {what}", "other", "none", _NAME_ONLY),
    _k(16, "send_command_input", "send input to a running command: {what}", "other", "none", _NAME_ONLY),
    _k(17, "read_url_content", "read {what}", "other", "none", _NAME_ONLY),
    _k(18, "mcp", "use the MCP tool {what}", "other", "none", _NAME_ONLY),
    _k(
        19,
        "file_permission",
        "access {what}",
        "other",
        "none",
        f"answer: none public; name: {RESEARCH} §8.1; request spec "
        f"(FilePermissionInteractionSpec): {FIELD_MAP}",
    ),
    _k(20, "elicitation", "ask for input: {what}", "other", "none", _NAME_ONLY),
    _k(
        21,
        "permission",
        "{what}",
        "permission",
        "recorded",
        f"adapters/simulator/shapes/run_command_done.json; scope: {RESEARCH} §12",
        "allow, scope, userDenyInstruction",
    ),
    _k(
        22,
        "ask_question",
        "answer {what}",
        "question",
        "recorded",
        f"adapters/simulator/shapes/ask_question_done.json; {RESEARCH} §8.2",
        "responses",
    ),
    _k(23, "approval_interaction", "approve: {what}", "other", "none", _NAME_ONLY),
)

BY_FIELD: dict[str, Kind] = {k.field: k for k in KINDS}
#: the settings gates agy raises beyond its tool-permission setting (omnigent-ai/omnigent#8100): not
#: CascadeUserInteraction kinds but fields a WAITING step may name; named cards, never answered here
SETTING_GATES: dict[str, str] = {
    "artifactReviewPolicy": "review an artifact (agy's artifactReviewPolicy setting)",
    "allowNonWorkspaceAccess": "reach outside the workspace (agy's allowNonWorkspaceAccess setting)",
}


def gate_kind(field: str) -> GateKindName:
    """The gate kind the harness makes of agy's interaction ``field`` (an unknown field: ``other``)."""
    kind = BY_FIELD.get(field)
    return kind.gate if kind is not None else "other"


def answerable_fields() -> tuple[str, ...]:
    return tuple(k.field for k in KINDS if k.gate != "other")


# -- what the human must see ---------------------------------------------------------------------

#: request fields naming the subject, most telling first (what agy would act on)
_SUBJECT_KEYS = (
    "url",
    "uri",
    "absolutePathUri",
    "targetFileUri",
    "filePath",
    "path",
    "target",
    "proposedCommandLine",
    "commandLine",
    "command",
    "input",
    "code",
    "toolName",
    "serverName",
    "name",
    "title",
    "message",
    "description",
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def subject(request: dict[str, Any], body: dict[str, Any] | None = None) -> str:
    """What a request acts on (a URL, a path, a command, a tool...), read from its own fields, then
    from the step's typed body and ``resource``; "" when nothing names it."""
    for source in (request, _dict(request.get("resource")), body or {}):
        for key in _SUBJECT_KEYS:
            text = _text(source.get(key))
            if text:
                if key == "toolName" and _text(source.get("serverName")):
                    return f"{_text(source.get('serverName'))}/{text}"
                return text
    return ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _quote(text: str, limit: int = 160) -> str:
    shown = one_line(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Reading:
    """A gate's request as a human must see it: agy's kind (its field and number; 0 for a field not
    in the table), what it acts on, the one-line card text, and whether anything here answers it."""

    field: str
    number: int
    subject: str
    card: str
    answerable: bool
    evidence: Evidence


def read_request(gate: GateOpened) -> Reading:
    """The typed reading of ``gate``'s request (:class:`Reading`)."""
    kind = BY_FIELD.get(gate.interaction)
    p = gate.permission
    thing = subject(gate.request) or (p.command_line or p.target if p is not None else "")
    return Reading(
        field=gate.interaction,
        number=kind.number if kind is not None else 0,
        subject=thing,
        card=describe(gate),
        answerable=gate.answerable and gate.kind != "other",
        evidence=kind.evidence if kind is not None else "none",
    )


def describe(gate: GateOpened) -> str:
    """The one-line card text of ``gate`` (through the one display rule): "agy asks to run `ls -la`
    in ~/proj", "agy asks to read https://…", "agy asks to access ~/proj/a.py"; a kind nothing here
    can answer ends with "— answer in agy's terminal"."""
    field = gate.interaction
    kind = BY_FIELD.get(field)
    request = gate.request
    if field == code_review.FIELD:  # agy's file-edit review: not a CascadeUserInteraction
        return code_review.card_text(gate)
    if gate.kind == "question":
        questions = [q.question for q in gate.questions]
        first = questions[0] if questions else "a question"
        more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
        return f"agy asks: {_quote(first)}{more}"
    p = gate.permission
    if field in ("permission", "runCommand") and p is not None and p.command_line:
        command = p.command_line
        if gate.interaction == "runCommand":
            proposed = request.get("proposedCommandLine")
            command = proposed if isinstance(proposed, str) and proposed else command
        where = f" in {_quote(p.cwd)}" if p.cwd else ""
        return f"agy asks to run `{_quote(command)}`{where}"
    if field == "permission" and p is not None:
        what = p.description or " ".join(x for x in (p.action, p.target) if x) or "a permission"
        return f"agy asks for permission: {_quote(what)}"
    thing = subject(request)
    if field in SETTING_GATES:
        detail = f": {_quote(thing)}" if thing else ""
        return f"agy asks to {SETTING_GATES[field]}{detail} — answer in agy's terminal"
    if kind is None:
        name = one_line(field or "an interaction")
        tail = f" ({_quote(thing)})" if thing else ""
        return f"agy waits for {name}{tail} — answer in agy's terminal"
    if field == "filePermission":
        directory = " (a directory)" if request.get("isDirectory") is True else ""
        why = _text(request.get("blockReason"))
        reason = " outside the workspace" if why == "BLOCK_REASON_OUTSIDE_WORKSPACE" else ""
        reason = " (gitignored)" if why == "BLOCK_REASON_GITIGNORED" else reason
        tail = "" if gate.answerable and gate.kind != "other" else " — answer in agy's terminal"
        return f"agy asks to access {_quote(thing or 'a file')}{directory}{reason}{tail}"
    what = _quote(thing) if thing else ""
    template = kind.asks if what else kind.asks.replace(": {what}", "")
    text = " ".join(template.replace("{what}", what or "something").split())
    tail = "" if gate.answerable and gate.kind != "other" else " — answer in agy's terminal"
    return f"agy asks to {text} ({field}){tail}"
