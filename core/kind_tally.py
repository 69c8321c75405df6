"""Which gate kinds this agy has taken answers of, and which it refused, read from the decision
ledger's ``delivery`` records (:mod:`agy_harness.composition.service.decisions`): the evidence a
user's own run gives (``agy-harness doctor`` and ``record`` print it). The descriptors answer each
kind is built from are the IDE's build (:mod:`.kinds`); a kind this agy ``refused`` is one whose
answer message it does not take. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .kinds import in_words

Tally = dict[str, dict[str, int]]  # interaction field -> {"taken": n, "refused": n}


def tally(records: Iterable[dict[str, Any]], conversation: str = "") -> Tally:
    """Per interaction field, how many answers agy took and refused (``conversation``: only its)."""
    out: Tally = {}
    for record in records:
        body = record.get("body")
        if record.get("type") != "delivery" or not isinstance(body, dict):
            continue
        if conversation and body.get("conversation") != conversation:
            continue
        field, agy = body.get("interaction"), body.get("agy")
        if not isinstance(field, str) or agy not in ("taken", "refused"):
            continue  # a record older than these fields, or an answer that never reached agy
        counts = out.setdefault(field or "permission", {"taken": 0, "refused": 0})
        counts[agy] += 1
    return out


def tally_lines(counts: Tally) -> list[str]:
    """The tally in words, one line each for taken and refused ("" kinds: none)."""
    if not counts:
        return ["gate kinds this agy took or refused: none yet in the decision ledger"]
    lines = []
    for outcome, words in (("taken", "took"), ("refused", "refused")):
        kinds = [f"{in_words(field)} ×{n[outcome]}" for field, n in sorted(counts.items()) if n[outcome]]
        if kinds:
            lines.append(f"gate kinds whose answer this agy {words} (decision ledger): {'; '.join(kinds)}")
    return lines
