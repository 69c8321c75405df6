"""The simulator's model catalog (``GetAvailableModels``)."""

from __future__ import annotations

from typing import Any

DEFAULT_MODEL = "MODEL_PLACEHOLDER_M20"
MODELS: dict[str, dict[str, Any]] = {
    "MODEL_PLACEHOLDER_M20": {
        "model": "MODEL_PLACEHOLDER_M20",
        "label": "Gemini 3 Pro",
        "isRecommended": True,
    },
    "MODEL_PLACEHOLDER_M71": {
        "model": "MODEL_PLACEHOLDER_M71",
        "label": "Gemini 3 Flash",
        "isRecommended": False,
    },
    "MODEL_PLACEHOLDER_M50": {
        "model": "MODEL_PLACEHOLDER_M50",
        "label": "Gemini 2.5 Flash Lite",
        "isRecommended": False,
    },
}
