"""``agy-harness doctor``'s gate lines: which route this agy takes for a lasting grant, which gate kinds
are answerable here, and which agy settings raise gates the harness can only name."""

from __future__ import annotations

from typing import Any

from agy_harness.core.kinds import KINDS, SETTING_GATES
from agy_harness.core.steps import as_dict, as_list, as_str


def _recorded_scopes(steps: list[Any]) -> list[str]:
    """The PermissionScope names agy recorded in answers to this conversation's gates."""
    seen: list[str] = []
    for raw in steps:
        for done in as_list(as_dict(raw).get("completedInteractions")):
            response = as_dict(as_dict(done).get("response"))
            scope = as_str(as_dict(response.get("permission")).get("scope"))
            if scope and scope not in seen:
                seen.append(scope)
    return seen


def gate_report(steps: list[Any]) -> dict[str, Any]:
    """The JSON-ready gate section of the report, from the conversation's steps (read-only)."""
    recorded = _recorded_scopes(steps)
    if recorded:
        route = (
            "RPC permission.scope: this agy recorded " + ", ".join(recorded) + " in this conversation's answers"
        )
    else:
        route = (
            "RPC permission.scope (agy's descriptors); not yet seen recorded by this agy: where agy asks "
            "again for a request a lasting grant covered, the harness says so and stops offering that "
            "scope; the fallback is agy's own menu keys (attach --tmux, GateAnswer.persist)"
        )
    return {
        "scope_route": route,
        "answerable": [k.field for k in KINDS if k.gate != "other"],
        "named_only": [k.field for k in KINDS if k.gate == "other"],
        "settings": {name: what for name, what in SETTING_GATES.items()},
    }


def render_gates(report: dict[str, Any]) -> list[str]:
    gates = report.get("gates")
    if not isinstance(gates, dict):
        return []
    return [
        f"scopes: {gates['scope_route']}",
        f"gate kinds answered here: {', '.join(gates['answerable'])}",
        f"gate kinds shown as named cards (answer in agy's terminal): {', '.join(gates['named_only'])}",
        *(
            f"setting {name}: agy gates to {what.split(' (')[0]}; --dangerously-skip-permissions does not "
            "cover it (a named card here)"
            for name, what in gates["settings"].items()
        ),
    ]
