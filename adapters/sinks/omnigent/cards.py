"""omnigent's card for a permission gate: what its web UI and its terminal chat each show, and the
labelled choices it offers.

omnigent 0.19.1 shows an elicitation's fields in two media, and they differ:

* its **web UI** (the SPA's approval card, ``K_e`` in ``static/web-ui/assets/index-*.js``) shows
  ``message`` and, for phase ``agy_permission``, ``action_description`` as plain text (React text
  nodes: exact). A ``requestedSchema`` of exactly one property ``answer`` with an ``enum`` makes the
  card one button per enum value (each resolves ``accept`` with ``content = {"answer": <value>}``)
  and hides ``content_preview`` (the buttons replace the preview block and omnigent's own
  Approve / "Allow commands starting with ... for this session" / Reject row);
* its **terminal chat** (``repl/_repl.py _make_elicitation_prompt``) prints ``message`` and
  ``content_preview`` as rich markup (the preview cut at 200 characters), then ``y`` / ``a`` / ``n``;
  ``y`` accepts with the form filled in by itself: the enum's first value
  (``tools/_elicitation_schema.py build_accept_content_from_schema``). It never prints
  ``action_description``.

So each field carries agy's text in the medium that shows it, by the one rendering rule
(:mod:`agy_harness.core.display`):

* ``message`` (both): the request on one line, exact, where rich's markup escaping leaves it
  unchanged; otherwise a fixed text that points to the fields below (a ``[x]`` in a command would
  read ``\\[x]`` on the web, or be eaten as a style tag by the chat);
* ``action_description`` (web only): the exact request (when ``message`` could not carry it) and
  agy's own description of it;
* ``content_preview`` (chat only): the request escaped for rich markup, and what ``y`` / ``n`` do.

agy's file-edit review (:mod:`agy_harness.core.code_review`) is offered "Reject" alone: neither
medium shows a whole diff, so an accept here would approve what no one saw; the card says where to
accept it.

The choices (:func:`choices`): "Allow once" (or the kind's own: "Deploy", "Accept") first (the chat's
``y``), then each lasting scope the gate lists and the harness can honour (``GateOpened.scopes``,
labelled by the core), then the deny in the kind's words (:func:`~agy_harness.core.scopes.deny_label`:
"Deny", "Cancel the deploy", "Decline"). None of the allows where the gate says why (``no_allow``):
its card says it (an elicitation asking for content: where to give it; the buttons carry none).
Nothing else is offered: omnigent's own agy buttons (``always_allow_pattern``) are never asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from rich.markup import escape as escape_markup

from agy_harness.core import code_review
from agy_harness.core.display import MARKER, command_view, one_line, path_notes
from agy_harness.core.kinds import describe
from agy_harness.core.scopes import SCOPES, Scope, allow_choices, deny_label, scope_label
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

COMMAND_LINES = 40  # a taller command is cut in the card (with a marker)
REQUEST_CHARS = 2000  # the request on one line holds this much before it is cut (with a marker)
DENY = "Deny"
REJECT = "Reject"
#: agy's file-edit review on omnigent: its card shows one line, never a whole diff, so it offers only Reject
NO_ACCEPT = (
    "omnigent cannot show this diff whole: accept it on the board, in your editor (ACP) or in "
    "agy's terminal; Reject is the only answer here"
)
POINTER = "agy asks for permission: the request is shown below"
#: an MCP server asks for content: omnigent's buttons carry none, so its accept is given elsewhere
NO_CONTENT = (
    "omnigent's buttons carry no content: to accept, type the content it asks for (a JSON object) on "
    "the agy board or in agy-harness attach (accept: <JSON object>), or answer in agy's terminal"
)


@dataclass(frozen=True, slots=True)
class Choice:
    label: str  # the button's text on the web card, and the value it resolves with
    answer: GateAnswer


def choices(gate: GateOpened) -> tuple[Choice, ...]:
    """The card's choices in display order: "Allow once" first (what the chat's ``y`` picks), each
    lasting scope of ``gate.scopes``, then Deny. Labels are unique (a label read back names one)."""
    if code_review.is_review(gate):  # its card cannot show a diff whole: no accept here (said on it)
        return (Choice(REJECT, GateAnswer(allow=False)),)
    out: list[Choice] = []
    deny = deny_label(gate)
    allowed = allow_choices(gate)
    if "once" in allowed:
        out.append(Choice(scope_label(gate, "once"), GateAnswer(allow=True)))
    for scope in allowed:
        label = scope_label(gate, scope)
        if scope in SCOPES and scope != "once" and label not in (c.label for c in out) and label != deny:
            out.append(Choice(label, GateAnswer(allow=True, scope=cast(Scope, scope))))
    out.append(Choice(deny, GateAnswer(allow=False)))  # the kind's own words ("Cancel the deploy")
    return tuple(out)


def choice_for(gate: GateOpened, label: str) -> Choice | None:
    """The choice whose label is exactly ``label`` (what the web card's button resolved with)."""
    return next((c for c in choices(gate) if c.label == label), None)


def markup_neutral(text: str) -> bool:
    """Whether omnigent's chat shows ``text`` as it is (rich's markup escaping leaves it unchanged),
    so one field can carry it exactly to the web UI and to the chat alike."""
    return escape_markup(text) == text


def request_line(gate: GateOpened) -> tuple[str, str]:
    """The request on one line by the rendering rule: what (the command, else agy's description)
    and where (`` (in <cwd>)``)."""
    p = gate.permission
    command = (p.command_line or p.target) if p else ""
    if command:  # the command alone (exact where markup-neutral); its hash and flags: request_mark
        view = command_view(command, COMMAND_LINES)
        what = view.title(REQUEST_CHARS).removesuffix(view.tail)
    else:
        what = one_line((p.description if p else "") or gate.tool_name or "an action")
    where = f" (in {one_line(p.cwd)})" if p and p.cwd else ""
    return what, where


def request_mark(gate: GateOpened) -> str:
    """The request's short hash and look-alike flags (the command's, the cwd's), by the rendering rule:
    beside the command on the card, never inside a field that carries the command text."""
    p = gate.permission
    command = (p.command_line or p.target) if p else ""
    view = command_view(command, COMMAND_LINES) if command else None
    marks = [f"{MARKER} {view.hash} {MARKER}", *view.flags] if view else []
    return " ".join(marks + (path_notes(p.cwd) if p and p.cwd else []))


def permission_fields(gate: GateOpened) -> dict[str, Any]:
    """The card's text fields (see the module doc) and its choices as ``requestedSchema``."""
    p = gate.permission
    what, where = request_line(gate)
    named = gate if gate.interaction else gate.model_copy(update={"interaction": "permission"})
    head = describe(named)  # the kind's named card text ("agy asks to run `ls -la` in ~/proj")
    message = head if markup_neutral(head) else POINTER
    whole = message != POINTER and what in message  # the message already holds the whole request
    described = one_line(p.description) if p and p.description else ""
    web = [] if whole else [what + where]
    if described and described not in message:
        web.append(f"agy: {described}")
    mark = request_mark(gate)  # the hash (and flags) kept on the card, beside the command, not in it
    web += [mark] if mark else []
    picks = choices(gate)
    others = len(picks) - 2
    legend = f"y = {picks[0].label}, n = {picks[-1].label}" + (
        f"; {others} more choice{'s' if others != 1 else ''} on omnigent's web card" if others > 0 else ""
    )
    if gate.interaction == "elicitation" and gate.no_allow:  # (core.gates.no_allow)
        web.append(NO_CONTENT)
        legend += f" · {NO_CONTENT}"
    if code_review.is_review(gate):
        web.append(NO_ACCEPT)
        legend = f"y / n = {REJECT} · {NO_ACCEPT}"
    fields: dict[str, Any] = {
        "message": message,
        "content_preview": escape_markup(
            ("" if whole else f"{what}{where} · ") + (f"{mark} · " if mark else "") + legend
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "answer": {"type": "string", "title": "Your answer", "enum": [c.label for c in picks]}
            },
            "required": ["answer"],
        },
    }
    if web:
        fields["action_description"] = " — ".join(web)
    return fields
