"""agy model ids -> the display names a sink shows (agy's ``GetAvailableModels`` ``displayName``): the
omnigent sink's and the terminal's, each a ``ShowsModelNames`` the session binds to agy's catalog."""

from __future__ import annotations

import logging

from agy_harness.ports.protocols import ModelCatalog

log = logging.getLogger("agy_harness.adapters.sinks.model_names")


class ModelNames:
    """Looks agy's catalog up once, and again for a model id it did not list; unknown ids stay as they are."""

    def __init__(self, catalog: ModelCatalog | None = None) -> None:
        self._catalog = catalog
        self._names: dict[str, str] = {}
        self._asked: set[str] = set()

    def bind(self, catalog: ModelCatalog) -> None:
        self._catalog = catalog
        self._asked.clear()

    async def learn(self, model: str) -> None:
        """Make sure ``model`` was looked up (a no-op without a catalog or once asked)."""
        if not model or model in self._names or model in self._asked or self._catalog is None:
            return
        self._asked.add(model)
        try:
            models = await self._catalog.models()
        except Exception as exc:  # the name is cosmetic: keep the id, never stop the stream for it
            log.warning("agy's model catalog is unavailable (%s); showing model ids", exc)
            return
        for info in models:
            if info.label:
                self._names[info.model] = info.label

    def name(self, model: str) -> str:
        return self._names.get(model, model)
