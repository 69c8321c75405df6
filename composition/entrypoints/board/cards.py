"""What the board shows of a gate and of an event: text only, every agy string made visible.

:func:`gate_card` is the ONE place that decides what a gate card shows (a command by the core's
rendering rule, :func:`agy_harness.core.display.command_view`; a cut command also carries its whole
text, ``full``, which the page shows on a click). A request whose whole text is over
:data:`INLINE_CHARS` (a command near agy's 4 MiB string cut) is never carried in a card: the card
holds the cut view as its preview and ``whole`` (the whole text's size and SHA-256, inside the
``shown`` digest), and the page fetches the text itself on demand (:func:`card_of` gives it to the
board, ``GET /api/s/ID/whole?gate=G&shown=D``); such a card offers no edit (``no_edit`` says why).
A permission card shows ONE short hash, the display rule's (its last ``⋯ #1a2b3c4d ⋯`` line:
:func:`~agy_harness.core.display.request_hash` of the command, path or action it asks to approve), as
every other surface does; ``hash`` repeats it (8 hex).
A question or a card agy answers in its own terminal shows none. ``anchor`` (the digest's first 8
hex, never shown) names the card in a notification's link. Its ``shown`` digest binds an
answer to exactly that: the page sends the digest back with the answer, and the board refuses an
answer whose digest is not the card's (the page is stale). The card includes the request's digest
(``GateOpened.digest``), and ``Session.answer`` delivers only to a WAITING step with it.

Strings pass through :func:`~agy_harness.adapters.sinks.escape.visible` (control, bidi and other
invisible format characters shown as escapes); the page puts them into the DOM as text
(``textContent``), never as HTML: agy's text is hostile.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, assert_never

from agy_harness.adapters.sinks.edits import PATH_KEYS, edit_rows, first
from agy_harness.adapters.sinks.escape import visible, visible_value
from agy_harness.adapters.sinks.terminal_cards import COMMAND_KEYS, CWD_KEYS, result_lines
from agy_harness.composition.root.policy import RuleError, approval_key, propose_rule
from agy_harness.core import code_review
from agy_harness.core.answers import carries_reason
from agy_harness.core.carriage import as_printed, printed_event
from agy_harness.core.decided_line import decided_line
from agy_harness.core.display import command_view, label_notes, one_line, path_notes, request_hash
from agy_harness.core.kind_cards import elicitation_fields, schema_of
from agy_harness.core.kinds import describe
from agy_harness.core.scopes import allow_choices, deny_label, scope_label
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    ReasoningDelta,
    Rotation,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    event_to_json,
)

MAX_OUTPUT_LINES = 40
COMMAND_LINES = 40  # a taller command is cut in the card (with a marker)


#: a request's whole text (the rendering rule's) up to this many characters is carried in its card;
#: past it, the card carries a preview, the size and the SHA-256, and the page fetches the text
INLINE_CHARS = 64 * 1024
ASK_CHARS = 160  # the command in a one-line ask (a title, a notification), cut past this with a marker
HOME = str(Path.home())


def short_path(path: str) -> str:
    """``path`` made visible, the user's home as ``~``."""
    if path == HOME or path.startswith(HOME.rstrip("/") + "/"):
        path = "~" + path[len(HOME.rstrip("/")) :]
    return one_line(path)


def ask_line(gate: GateOpened) -> str:
    """What ``gate`` asks, on one line, naming the request itself (a title, a notification):
    "agy asks to run `rm -rf build` in ~/proj" (the display rule's one-line form of the command, cut
    with "…"; the card shows it whole, with its hash);
    any other kind by its name (:func:`agy_harness.core.kinds.describe`)."""
    p = gate.permission
    if gate.kind == "permission" and p is not None and p.command_line:
        command = one_line(p.command_line)  # the rule's one-line form: every character visible
        if len(command) > ASK_CHARS:
            command = command[: ASK_CHARS - 1] + "…"
        return f"agy asks to run `{command}`" + (f" in {short_path(p.cwd)}" if p.cwd else "")
    return describe(gate)


def gate_card(gate: GateOpened) -> dict[str, Any]:
    """The card of ``gate``: what the human is asked, and the digest an answer must carry."""
    return card_of(gate)[0]


def card_of(gate: GateOpened) -> tuple[dict[str, Any], str | None]:
    """The card of ``gate`` and, for a request too large to carry in it (its ``whole``), the whole
    text the page fetches (the rendering rule's, nothing cut); None for every other card."""
    text: str | None = None
    shown: dict[str, Any] = {
        "kind": gate.kind,
        "tool": visible(gate.tool_name),
        "answerable": gate.answerable and gate.kind != "other",
    }
    if gate.kind == "permission" and gate.permission is not None:
        p = gate.permission
        what = p.command_line or p.target or p.description or p.action
        if code_review.is_review(gate):  # agy's file-edit review: the card shows its whole diff
            what = code_review.diff_text(gate)
        # the core's one rendering rule: every line visible, blank-line runs collapsed with a count,
        # an over-tall command cut with a marker (as the terminal, ACP and omnigent show it)
        shown["command"] = "\n".join(command_view(what, COMMAND_LINES).lines)
        # a cut card can always be expanded to the whole text: the same rule, nothing cut (blank-line
        # and space runs still collapsed with their count, every character visible)
        whole = "\n".join(command_view(what, sys.maxsize, sys.maxsize).lines)
        if whole != shown["command"] and len(whole) <= INLINE_CHARS:
            shown["full"] = whole
        elif whole != shown["command"]:  # too large to carry in every snapshot: fetched on demand
            text = whole
            shown["whole"] = {
                "chars": len(whole),
                "lines": whole.count("\n") + 1,
                "sha256": hashlib.sha256(whole.encode("utf-8", "surrogatepass")).hexdigest(),
            }
        shown["cwd"] = visible(p.cwd)
        # look-alike flags under the directory (a Cyrillic "і" named with its code point), as every surface
        shown["cwd_notes"] = path_notes(p.cwd) if p.cwd else []
        shown["hash"] = request_hash(what)[1:]  # the one hash the card shows: the command view's last line
        shown["is_command"] = bool(p.command_line)  # else a path or an action: no "$ " before it
        shown["description"] = visible(p.description) if p.description and p.description != what else ""
        shown["deny_reason"] = carries_reason(gate)  # a "why?" box only where agy's answer carries it
        # one allow button per scope the gate offers (labelled by core.scopes), never another
        shown["allows"] = [
            {"scope": scope, "label": scope_label(gate, scope)} for scope in allow_choices(gate)
        ]
        if code_review.is_review(gate):  # accept / reject (with written feedback): its only answers
            shown["review"] = True
            shown["allows"] = [{"scope": a["scope"], "label": "Accept"} for a in shown["allows"]]
        # the deny in the kind's own words ("Cancel the deploy", "Decline"; a review's "Reject")
        shown["deny_label"] = "Reject" if code_review.is_review(gate) else deny_label(gate)
        shown["no_allow"] = visible(gate.no_allow)  # why no allow is offered ("": the buttons say it)
        shown["sandbox"] = p.sandbox_override  # agy asks to run it outside its sandbox (never granted here)
        content = content_box(gate)
        if content:  # an MCP server asks for content: the human types it (core checks it; never guessed)
            shown["content"] = content
            shown["no_allow"] = ""
        if gate.editable and p.command_line and shown["allows"]:  # (an edit is an allow)
            if text is None and len(p.command_line) <= INLINE_CHARS:
                shown["edit_from"] = p.command_line  # agy's text, to edit (the page shows edits visibly)
            else:  # an edit is sent in a POST body (64 KiB at most): said, never a button that fails
                shown["no_edit"] = "too large to edit on the board: allow it as shown, or deny it"
    elif gate.kind == "question":
        shown["questions"] = [
            {
                "question": visible(q.question),
                "notes": label_notes(q.question),  # look-alikes flagged (core.display), as every surface
                "multi": q.multi_select,
                "options": [
                    {"id": visible(o.id), "text": visible(o.text), "notes": label_notes(o.text)}
                    for o in q.options
                ],
            }
            for q in gate.questions
        ]
    else:
        shown["what"] = visible(gate.interaction or gate.tool_name or "an action")
    shown["request"] = gate.digest  # the request the harness binds the answer to (core/binding.py)
    # (a card with a content box is accepted here: its one line says what is asked, not "elsewhere")
    asked = gate.model_copy(update={"no_allow": ""}) if "content" in shown else gate
    shown["ask"] = ask_line(asked)  # the request on one line: the tab's title, the browser notification
    shown["anchor"] = gate.digest[:8]  # a notification's link names the card by it (never shown)
    digest = hashlib.sha256(json.dumps(shown, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()
    return {
        **shown, "gate_id": gate.gate_id, "cascade_id": gate.cascade_id, "shown": digest[:32],
        **proposal(gate),
    }, text  # fmt: skip


def content_box(gate: GateOpened) -> dict[str, str]:
    """An MCP elicitation that asks for content (its ``no_allow`` says so): the box the page offers
    for it -- the fields asked for in words, the requested schema whole, the accept button's label --
    so the human types the content (``{"accept": text}``; :func:`agy_harness.core.content.checked_content`
    checks it against the schema before anything is sent). {} for every other gate, and for a schema
    that cannot be read (its accept is answered in agy's terminal)."""
    if gate.interaction != "elicitation" or not gate.no_allow or "unreadable" in schema_of(gate.request):
        return {}
    raw = gate.request.get("requestedSchemaJson")
    return {
        "asks": visible(elicitation_fields(gate.request)),
        "schema": visible(raw if isinstance(raw, str) else ""),
        "label": scope_label(gate, "once"),
    }


def proposal(gate: GateOpened) -> dict[str, str]:
    """The narrowest rule for a command gate (``proposal``, TOML the human may edit and save; or
    ``no_proposal``, why none) and its ``approval_key`` (identical approvals share it). Not part of
    the ``shown`` digest: it is offered after an approval, never approved by one."""
    if gate.kind != "permission" or gate.permission is None or not gate.permission.command_line:
        return {}
    try:
        return {"proposal": propose_rule(gate), "approval_key": approval_key(gate)}
    except RuleError as exc:
        return {"no_proposal": str(exc)}


def event_view(event: Event, card: dict[str, Any] | None = None) -> dict[str, Any]:
    """``event`` as the page gets it: its JSON form, every string made visible, plus the layout of a
    tool card (command, cwd, path, diff rows) or a tool result (trimmed output). A gate's card is
    ``card`` where the caller built it already (:func:`card_of`)."""
    data: dict[str, Any] = visible_value(event_to_json(printed_event(event)))  # \r as a terminal shows it
    match event:
        case GateOpened():
            data["card"] = card if card is not None else gate_card(event)
            data.pop("request", None)  # the card says it; agy's raw request can be large
            if "whole" in data["card"]:  # so is the permission: its preview is on the card, the
                data.pop("permission", None)  # whole text fetched on demand
        case ToolCall():
            args = event.arguments
            data["view"] = {
                "command": visible(first(args, COMMAND_KEYS)),
                "cwd": visible(first(args, CWD_KEYS)),
                "path": visible(first(args, PATH_KEYS)),
                "diff": [[kind, visible(line)] for kind, line in edit_rows(args) or []],
            }
        case ToolResult():
            result = event.model_copy(update={"output": as_printed(event.output)})
            data["output"] = "\n".join(visible(text) for _, text in result_lines(result, MAX_OUTPUT_LINES))
        case GateWithdrawn() if event.decided_by is not None:
            data["decided"] = decided_line(event.decided_by)  # who answered it, where (issue #36)
        case (
            UserMessage()
            | AssistantMessage()
            | TextDelta()
            | ReasoningDelta()
            | StatusChanged()
            | Usage()
            | ModelChanged()
            | GateWithdrawn()  # (a gate no one here decided)
            | Rotation()
            | SubagentStarted()
            | Notice()
        ):
            pass  # its JSON form says it all
        case other:
            assert_never(other)
    return data
