"""``agy-harness doctor``'s gate lines: which route this agy takes for a lasting grant, which gate kinds
are answerable here, and which agy settings raise gates the harness can only name."""

from __future__ import annotations

from typing import Any

from agy_harness.core.kind_tally import tally_lines
from agy_harness.core.kinds import KINDS, SETTING_GATES, in_words
from agy_harness.core.scope_route import scope_route


def gate_report(steps: list[Any], tally: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """The JSON-ready gate section of the report, from the conversation's steps (read-only). The scope
    route is :mod:`agy_harness.core.scope_route`'s, as ``agy-harness record`` says it; ``tally``: per
    kind, the answers this agy took and refused, from the decision ledger
    (:func:`agy_harness.core.kind_tally.tally`)."""
    route = scope_route(steps)
    return {
        "scope_route": route.text(),
        "grants_not_kept": [n.text() for n in route.not_kept],
        "answerable": [k.field for k in KINDS if k.gate != "other"],
        "evidence": {k.field: k.evidence for k in KINDS},
        "named_only": [k.field for k in KINDS if k.gate == "other"],
        "settings": {name: what for name, what in SETTING_GATES.items()},
        "agy_took_refused": tally or {},
    }


def render_gates(report: dict[str, Any]) -> list[str]:
    gates = report.get("gates")
    if not isinstance(gates, dict):
        return []
    named = gates["named_only"]
    evidence = gates.get("evidence", {})
    recorded = [in_words(f) for f in gates["answerable"] if evidence.get(f) == "recorded"]
    described = [in_words(f) for f in gates["answerable"] if evidence.get(f) != "recorded"]
    return [
        f"scopes: {gates['scope_route']}",
        f"gate kinds answered here as agy recorded them: {'; '.join(recorded)}",
        f"gate kinds answered here from the IDE's descriptors (unconfirmed on this agy until it takes "
        f"one): {'; '.join(described)}",
        *(
            [f"gate kinds shown as named cards (answer in agy's terminal): {'; '.join(map(in_words, named))}"]
            if named
            else []
        ),
        *(
            f"setting {name}: agy gates to {what.split(' (')[0]}; --dangerously-skip-permissions does not "
            "cover it (a named card here)"
            for name, what in gates["settings"].items()
        ),
        *tally_lines(gates.get("agy_took_refused") or {}),
    ]
