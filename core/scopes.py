"""agy's permission scopes: which lasting grants a gate offers, how each is named to a human, and how
each travels to agy. Pure.

agy's ``PermissionInteraction`` answer carries ``scope`` (``PermissionScope``: UNSPECIFIED=0, ONCE=1,
CONVERSATION=2, WORKSPACE=3, GLOBAL=4, PROJECT=5; read from the descriptors Google ships, FarrelAD/
ag-attention-bridge ``docs/ANTIGRAVITY_NATIVE_INTERACTION_RESEARCH.md`` §12.3; the IDE's live log shows
``{"allow": true, "scope": "PERMISSION_SCOPE_ONCE"}``). The harness sends it with an allow; agy keeps
the grant. Which scopes a gate offers (:func:`offered`), in display order:

* a ``permission`` where agy suggests a lasting rule (``persistSuggestionType``
  ``PERSIST_SUGGESTION_TYPE_SUGGESTED`` and a ``suggestedPersistPattern``, as in the recorded
  ``run_command_waiting``): ``once``, ``conversation``, ``global`` -- the three allows agy's own menu
  offers for that request ("Yes", "... always allow in this conversation for commands that start with
  '<pattern>'", the same persisted to settings.json: omnigent 0.19.1 ``to_tui_selection_keys``);
* any other ``permission``: ``once`` only -- agy's own menu offers a lasting allow only where it
  suggests a pattern that shows the grant's breadth (without one, ``to_tui_selection_keys`` downgrades
  "always" to a one-time approve), so no lasting grant is offered whose breadth nobody can see;
* ``runCommand`` (``{confirm, proposedCommandLine, submittedCommandLine}``: no scope field): ``once``;
* ``filePermission`` (``{allow, scope, absolutePathUri}``: the IDE's descriptors): ``once`` and
  ``conversation`` -- the grant names the one path the card shows (agy keeps file grants per path:
  ``FileAccessPermission {path, is_directory, allow, scope}``);
* every other kind answerable here (:mod:`.kinds`: ``{confirm}``, deploy, elicitation): ``once``;
  none where the gate says why no allow is offered (``no_allow``);
* anything else: nothing.

``workspace`` and ``project`` are agy's values too (labelled here), but no request of agy's says when
it offers them: they are never offered until one does. A scope agy did not keep (it asked again for a
request the grant covered) is dropped for the rest of the session (:func:`without`).
"""

from __future__ import annotations

from typing import Any, Literal

from agy_harness.ports.events import GateOpened

from .cut_marks import cuts_in
from .display import one_line

Scope = Literal["once", "conversation", "workspace", "project", "global"]
SCOPES: tuple[Scope, ...] = ("once", "conversation", "workspace", "project", "global")
#: each scope as agy's PermissionScope enum name (proto-JSON)
PERMISSION_SCOPE: dict[str, str] = {
    "once": "PERMISSION_SCOPE_ONCE",
    "conversation": "PERMISSION_SCOPE_CONVERSATION",
    "workspace": "PERMISSION_SCOPE_WORKSPACE",
    "global": "PERMISSION_SCOPE_GLOBAL",
    "project": "PERMISSION_SCOPE_PROJECT",
}
#: the text forms: ``allow <word>`` (``allow`` alone is once)
SCOPE_WORDS: dict[str, Scope] = {
    "once": "once",
    "conversation": "conversation",
    "workspace": "workspace",
    "project": "project",
    "always": "global",
    "global": "global",
}
PERSIST_SUGGESTED = "PERSIST_SUGGESTION_TYPE_SUGGESTED"
#: interactions answered with a PermissionScope (the others, if answerable, are once only)
SCOPED_INTERACTIONS = frozenset({"permission", "filePermission"})
#: the kinds answered by ``{confirm}`` (the IDE's descriptors)
CONFIRM_KINDS = frozenset(
    {
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
    }
)
#: the kinds answered by a one-time allow (no scope field): :mod:`.kinds`
ONCE_ONLY = CONFIRM_KINDS | {"runCommand", "deploy", "elicitation"}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def offered(interaction: str, request: dict[str, Any]) -> tuple[str, ...]:
    """The scopes a gate of agy's ``interaction`` field asking ``request`` offers (module doc)."""
    if interaction == "permission":
        suggested = _text(request.get("persistSuggestionType")) == PERSIST_SUGGESTED
        if suggested and _text(request.get("suggestedPersistPattern")):
            return ("once", "conversation", "global")
        return ("once",)  # no pattern: agy shows no breadth for a lasting grant (module doc)
    if interaction == "filePermission":
        return ("once", "conversation")
    if interaction in ONCE_ONLY:
        return ("once",)
    return ()


def allow_choices(gate: GateOpened) -> tuple[str, ...]:
    """The allows a surface offers for ``gate``, in order: its ``scopes``; an answerable permission
    whose event lists none (one built by hand, or by an older harness) offers ``once`` alone, as
    :func:`agy_harness.core.answers.parse_answer` reads a plain allow; anything else offers none. A
    request cut past the 4 MiB string cut (:func:`is_cut`) offers none: it cannot be shown whole, so
    the parser refuses any allow of it, and no surface shows a button it would refuse."""
    if is_cut(gate) or gate.no_allow:
        return ()
    if gate.scopes:
        return gate.scopes
    return ("once",) if gate.kind == "permission" and gate.answerable else ()


def is_cut(gate: GateOpened) -> bool:
    """Whether ``gate``'s request holds a part cut past the string cut (a cut mark): it can be denied,
    never allowed (:func:`agy_harness.core.answers.parse_answer`)."""
    p = gate.permission
    return next(cuts_in([gate.request, p.model_dump() if p is not None else None]), None) is not None


def without(scopes: tuple[str, ...], dropped: set[str] | frozenset[str]) -> tuple[str, ...]:
    """``scopes`` less the lasting ones agy did not keep (``once`` always stays)."""
    return tuple(s for s in scopes if s == "once" or s not in dropped)


def scope_label(gate: GateOpened, scope: str) -> str:
    """The button label of allowing ``gate`` with ``scope``: "Allow once" (or the kind's own:
    "Deploy", "Accept"), "Allow for this conversation", "Allow in this workspace", "Allow in this
    project", "Always allow" -- with agy's suggested pattern verbatim (through the one display rule)
    where agy gives one, and a file grant's path."""
    if scope == "once" and gate.allow_label:
        return gate.allow_label
    base = {
        "once": "Allow once",
        "conversation": "Allow for this conversation",
        "workspace": "Allow in this workspace",
        "project": "Allow in this project",
        "global": "Always allow",
    }.get(scope, f"Allow ({one_line(scope)})")
    if scope == "once":
        return base
    p = gate.permission
    if gate.interaction == "filePermission" and p is not None and p.target:
        return f"{base}: '{one_line(p.target)}'"
    pattern = p.suggested_persist_pattern if p is not None else ""
    if not pattern or gate.interaction != "permission":
        return base
    shown = one_line(pattern)
    if _is_command(gate):
        return f"{base}: commands that start with '{shown}'"
    return f"{base}: '{shown}'"


def deny_label(gate: GateOpened) -> str:
    """The deny's button label: the kind's own ("Cancel the deploy", "Decline"), else "Deny"."""
    return gate.deny_label or "Deny"


def _is_command(gate: GateOpened) -> bool:
    p = gate.permission
    return p is not None and (p.action == "command" or bool(p.command_line))


def scope_word(scope: str) -> str:
    """The text form that picks ``scope`` (``allow`` / ``allow conversation`` / ... / ``allow always``)."""
    if scope == "once":
        return "allow"
    return "allow always" if scope == "global" else f"allow {scope}"
