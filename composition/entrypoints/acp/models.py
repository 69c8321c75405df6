"""agy's models as the ACP session's ``model`` config option (and the ``/model`` command).

The option lists agy's catalog (``GetAvailableModels``); its current value is the client's choice,
else the model agy's conversation last ran on, else the model a turn without a choice runs on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp import RequestError
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from agy_harness.core.models import preferred_model
from agy_harness.ports.protocols import ModelInfo

MODEL_OPTION = "model"


@dataclass
class ModelOption:
    models: list[ModelInfo] = field(default_factory=list)
    chosen: str | None = None  # the client's choice (None: agy's own)
    seen: str = ""  # the model agy's conversation last ran on

    def current(self) -> str:
        if self.chosen:
            return self.chosen
        if self.seen:
            return self.seen
        preferred = preferred_model(self.models)  # the one a turn without a choice runs on
        return preferred.model if preferred else ""

    def config_options(self) -> list[SessionConfigOptionSelect]:
        if not self.models:
            return []
        current = self.current()
        options = [
            SessionConfigSelectOption(value=m.model, name=m.label or m.model, description=_note(m))
            for m in self.models
        ]
        if current and current not in {m.model for m in self.models}:
            options.append(SessionConfigSelectOption(value=current, name=current))
        return [
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION,
                name="Model",
                category="model",
                description="agy's model for the next turns (from agy's catalog)",
                current_value=current or options[0].value,
                options=options,
            )
        ]

    def choose(self, config_id: str, value: Any) -> None:
        if config_id != MODEL_OPTION:
            raise RequestError.invalid_params({"details": f"unknown config option {config_id!r}"})
        known = {m.model for m in self.models}
        if not isinstance(value, str) or value not in known:
            raise RequestError.invalid_params(
                {"details": f"{value!r} is not one of agy's models: {sorted(known)}"}
            )
        self.chosen = value

    def find(self, text: str) -> ModelInfo | None:
        """A model by its id or its name, case-insensitively (``/model Gemini 3 Flash``)."""
        wanted = text.strip().casefold()
        for m in self.models:
            if wanted in (m.model.casefold(), (m.label or "").casefold()):
                return m
        return None


def _note(model: ModelInfo) -> str | None:
    notes = [n for n, on in (("agy's default", model.default), ("recommended", model.recommended)) if on]
    return ", ".join(notes) or None
