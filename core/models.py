"""Which of agy's models a turn runs on when nobody chose one. Pure."""

from __future__ import annotations

import logging

from agy_harness.ports.protocols import ModelInfo

log = logging.getLogger("agy_harness.core.models")


def preferred_model(models: list[ModelInfo]) -> ModelInfo | None:
    """What agy itself would start a conversation with: the catalog's ``defaultAgentModelId``, else the
    ``recommended`` entry, else (a guess, logged) the first entry."""
    chosen = next((m for m in models if m.default), None) or next((m for m in models if m.recommended), None)
    if chosen is None and models:
        log.warning("planModel: the catalog names no default or recommended model; using %s", models[0].model)
        chosen = models[0]
    return chosen
