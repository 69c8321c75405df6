"""The simulator's model catalog (``GetAvailableModels``).

Shape (the reference harness, omnigent 0.19.1 ``antigravity_native/rpc.py::get_available_models``,
"live-verified, agy 1.0.10")::

    {"response": {"models": {KEY: {"model", "displayName", "recommended", "supportsThinking",
                                   "thinkingBudget"}},
                  "defaultAgentModelId": "<model enum>", ...}}

The model names, budgets and the order of the entries are guesses; the order puts a model that is
neither the default nor recommended first, so a client picking "the first model" is caught.
"""

from __future__ import annotations

import copy
from typing import Any

DEFAULT_MODEL = "MODEL_PLACEHOLDER_M20"
MODELS: dict[str, dict[str, Any]] = {
    "MODEL_PLACEHOLDER_M71": {
        "model": "MODEL_PLACEHOLDER_M71",
        "displayName": "Gemini 3 Flash",
        "recommended": False,
        "supportsThinking": True,
        "thinkingBudget": 8192,
    },
    "MODEL_PLACEHOLDER_M20": {
        "model": "MODEL_PLACEHOLDER_M20",
        "displayName": "Gemini 3 Pro",
        "recommended": True,
        "supportsThinking": True,
        "thinkingBudget": 32768,
    },
    "MODEL_PLACEHOLDER_M50": {
        "model": "MODEL_PLACEHOLDER_M50",
        "displayName": "Gemini 2.5 Flash Lite",
        "recommended": False,
        "supportsThinking": False,
        "thinkingBudget": 0,
    },
}


def catalog_answer(
    default_model: str = DEFAULT_MODEL, models: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The ``GetAvailableModels`` answer (``models``: the simulator's own list, else :data:`MODELS`)."""
    listed = MODELS if models is None else models
    return {"response": {"models": copy.deepcopy(listed), "defaultAgentModelId": default_model}}
