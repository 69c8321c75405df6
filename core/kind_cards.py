"""What a human must see of each gate kind: the exact subject (a URL, a path, a server and tool with
its arguments, the input bytes, the deploy target) read from the request and the step's own body, and
the one-line card text in words -- never agy's raw field name (that stays in logs and JSON). Pure.

agy's request specs of the ``{confirm}`` kinds are empty messages (:mod:`.kinds`): what agy would do
is the step's typed body (``openBrowserUrl.url``, ``executeBrowserJavaScript.javascriptSource``,
``mcpTool.serverName`` + ``toolCall``, ``sendCommandInput.input``: the IDE's descriptors), so the subject
is read there, after the request's own fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agy_harness.ports.events import GateOpened

from . import code_review
from .display import one_line
from .kind_table import BY_FIELD, SETTING_GATES, TERMINAL, Evidence

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
    "javascriptSource",
    "code",
    "toolName",
    "serverName",
    "name",
    "title",
    "message",
    "description",
    "text",
    "key",
)
#: per kind, the body fields that say what agy would do (after the subject), shown whole
_DETAIL_KEYS: dict[str, tuple[str, ...]] = {
    "runExtensionCode": ("language", "userFacingExplanation"),
    "executeBrowserJavascript": ("javascriptDescription", "title", "pageId"),
    "sendCommandInput": ("commandId",),
}
_NOISE = frozenset(
    {"pageMetadata", "browserStateDiff", "userRejected", "autoRunDecision", "screenshot", "mediaScreenshot"}
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


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


def _scalars(body: dict[str, Any]) -> str:
    """A browser step's own fields, as ``name=value`` (a click's place, a key, a text to type...)."""
    parts = []
    for key, value in body.items():
        shown = value is True or (isinstance(value, str | int | float) and not isinstance(value, bool))
        if key not in _NOISE and shown:
            parts.append(f"{key}={json.dumps(value, ensure_ascii=False)}")
    return " ".join(parts)


def kind_subject(field: str, request: dict[str, Any], body: dict[str, Any]) -> tuple[str, str]:
    """``(target, detail)`` of a gate of ``field``: the exact thing agy would act on, and what else the
    human must see to judge it (an MCP tool's arguments, an extension's language...); "" when unknown."""
    if field == "mcp":
        call = _dict(body.get("toolCall"))
        server = _text(body.get("serverName")) or _text(request.get("serverName"))
        tool = _text(call.get("name")) or _text(request.get("toolName"))
        target = f"{server}/{tool}" if server and tool else tool or server
        return target, _text(call.get("argumentsJson")) or _text(request.get("argumentsJson"))
    if field == "deploy":
        options = request.get("deployTargetOptions")
        if isinstance(options, list) and options:
            shown = [json.dumps(o, ensure_ascii=False, sort_keys=True) for o in options]
            return (shown[0], "") if len(shown) == 1 else ("", "; ".join(shown))
        return subject(request, body), ""
    if field == "elicitation":
        return _text(request.get("message")), elicitation_fields(request)
    if field == "sendCommandInput":
        text = _text(body.get("input")) or _text(request.get("input"))
        ends = " (then end the command)" if body.get("terminate") is True else ""
        detail = " ".join(f"{k}={_text(body.get(k))}" for k in _DETAIL_KEYS[field] if _text(body.get(k)))
        return text, (detail + ends).strip()
    if field in ("clickBrowserPixel", "captureBrowserScreenshot", "browserAction") and not subject(request):
        return subject({}, body) if field == "browserAction" and subject({}, body) else _scalars(body), ""
    target = subject(request, body)
    details = [_text(body.get(k)) for k in _DETAIL_KEYS.get(field, ()) if _text(body.get(k))]
    return target, "\n".join(details)


def elicitation_fields(request: dict[str, Any]) -> str:
    """What an MCP elicitation asks for, in words: "name (string, required), age (integer)"; a URL
    to open for a URL-mode request; "" when its schema asks for nothing."""
    url = _text(request.get("url"))
    if _text(request.get("mode")) == "url" or (url and not _text(request.get("requestedSchemaJson"))):
        return f"open {url}" if url else ""
    schema = schema_of(request)
    properties = _dict(schema.get("properties"))
    raw_required = schema.get("required")
    required: list[Any] = raw_required if isinstance(raw_required, list) else []
    parts = []
    for name, spec in properties.items():
        kind = _text(_dict(spec).get("type")) or "any"
        parts.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(parts)


def schema_of(request: dict[str, Any]) -> dict[str, Any]:
    """The elicitation's requested schema (``requestedSchemaJson``), {} when none or unreadable."""
    raw = _text(request.get("requestedSchemaJson"))
    if not raw:
        return {}
    try:
        schema = json.loads(raw)
    except ValueError:
        return {"unreadable": raw}
    return schema if isinstance(schema, dict) else {"unreadable": raw}


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
    thing = (p.command_line or p.target if p is not None else "") or subject(gate.request)
    return Reading(
        field=gate.interaction,
        number=kind.number if kind is not None else 0,
        subject=thing,
        card=describe(gate),
        answerable=gate.answerable and gate.kind != "other",
        evidence=kind.evidence if kind is not None else "none",
    )


def _tail(gate: GateOpened) -> str:
    if not gate.answerable or gate.kind == "other":
        return f" — {TERMINAL}"
    if gate.no_allow:
        return f" — it cannot be allowed from here ({gate.no_allow}); deny it here, or allow it in agy's terminal"
    return ""


def describe(gate: GateOpened) -> str:
    """The one-line card text of ``gate`` in words (through the one display rule): "agy asks to run
    `ls -la` in ~/proj", "agy asks to open https://… in a browser", "agy asks to access /etc (a
    directory) outside the workspace"; a kind nothing here answers ends with "— answer in agy's
    terminal" (once), a request that cannot be allowed here says why."""
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
        sandbox = " outside agy's sandbox" if p.sandbox_override else ""
        return f"agy asks to run `{_quote(command)}`{where}{sandbox}{_tail(gate)}"
    if field == "permission" and p is not None:
        what = p.description or " ".join(x for x in (p.action, p.target) if x) or "a permission"
        return f"agy asks for permission: {_quote(what)}{_tail(gate)}"
    thing = (p.target if p is not None else "") or subject(request)
    if field in SETTING_GATES:
        detail = f": {_quote(thing)}" if thing else ""
        return f"agy asks to {SETTING_GATES[field]}{detail} — {TERMINAL}"
    if kind is None:
        tail = f" ({_quote(thing)})" if thing else ""
        return f"agy waits for something this harness does not know{tail} — {TERMINAL}"
    if field == "filePermission":
        directory = " (a directory)" if request.get("isDirectory") is True else ""
        why = _text(request.get("blockReason"))
        reason = " outside the workspace" if why == "BLOCK_REASON_OUTSIDE_WORKSPACE" else ""
        reason = " (gitignored)" if why == "BLOCK_REASON_GITIGNORED" else reason
        return f"agy asks to access {_quote(thing or 'a file')}{directory}{reason}{_tail(gate)}"
    if field == "elicitation":
        server = _text(request.get("serverName"))
        who = f"the MCP server {_quote(server)}" if server else "an MCP server"
        wants = elicitation_fields(request)
        more = f" (it asks for: {_quote(wants)})" if wants else ""
        return f"{who} asks through agy: {_quote(thing or 'some input')}{more}{_tail(gate)}"
    if field == "deploy" and not thing:
        offered = p.description if p is not None else ""
        extra = f" (agy offers several targets: {_quote(offered)})" if offered else ""
        return f"agy asks to deploy{extra}{_tail(gate)}"
    what = _quote(thing) if thing else ""
    template = kind.asks if what else kind.asks.replace(": {what}", "").replace(" {what}", "")
    text = " ".join(template.replace("{what}", what).split())
    return f"agy asks to {text}{_tail(gate)}"
