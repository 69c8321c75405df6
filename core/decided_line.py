"""Who answered a gate, on one line, the same on every surface (issue #36): "allowed by you on the
board, 14:02", "denied by rule no-rm, 14:03", "answered in agy's terminal, 14:05", "timed out, 14:06".
The time is the decision's (``Decider.at``, UTC) in the local time zone, hours and minutes."""

from __future__ import annotations

from datetime import datetime

from agy_harness.ports.events import Decider

from .display import visible

VERDICTS = {"allow": "allowed", "deny": "denied", "choose": "answered", "refuse": "refused"}
SURFACES = {
    "board": "the board",
    "acp": "the editor (ACP)",
    "omnigent": "omnigent",
    "attach": "the terminal (attach)",
    "api": "the API",
    "demo": "the demo",
}
SCOPES = {"conversation": "for this conversation", "global": "always", "always": "always"}


def clock(at: str) -> str:
    """``at`` (ISO 8601) as local HH:MM; "" when it is not a time."""
    try:
        return datetime.fromisoformat(at).astimezone().strftime("%H:%M")
    except (TypeError, ValueError):
        return ""


def decided_line(d: Decider) -> str:
    verdict = VERDICTS.get(d.verdict, "answered")
    if d.kind == "rule":
        text = f"{verdict} by rule {d.rule_id or '(unnamed)'}"
    elif d.kind == "auto":
        text = f"{verdict} automatically by the policy {d.rule_id or '(unnamed)'}, no human asked"
    elif d.kind == "agy-terminal":
        text = "answered in agy's terminal"
    elif d.kind == "timeout":
        text = "timed out"
    elif d.kind == "interrupt":
        text = f"{verdict} by an interrupt"
    else:
        where = SURFACES.get(d.surface, d.surface)
        text = f"{verdict} by you" + (f" on {where}" if where else "")
    if d.scope in SCOPES:
        text += f" ({SCOPES[d.scope]})"
    when = clock(d.at)
    return visible(text + (f", {when}" if when else ""))
