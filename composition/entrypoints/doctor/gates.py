"""``agy-harness doctor``'s gate lines: which route this agy takes for a lasting grant, which gate kinds
are answerable here, and which agy settings raise gates the harness can only name."""

from __future__ import annotations

from typing import Any

from agy_harness.core.kinds import KINDS, SETTING_GATES
from agy_harness.core.scope_route import scope_route


def gate_report(steps: list[Any]) -> dict[str, Any]:
    """The JSON-ready gate section of the report, from the conversation's steps (read-only). The scope
    route is :mod:`agy_harness.core.scope_route`'s, as ``agy-harness record`` says it."""
    route = scope_route(steps)
    return {
        "scope_route": route.text(),
        "grants_not_kept": [n.text() for n in route.not_kept],
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
