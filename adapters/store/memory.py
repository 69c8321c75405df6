"""An in-memory ``CursorStore`` (tests, and callers that need no restart)."""

from __future__ import annotations

from agy_harness.ports.protocols import Cursor


class MemoryCursorStore:
    """A CursorStore in a dict (tests): saves and loads deep copies."""

    def __init__(self) -> None:
        self._cursors: dict[str, Cursor] = {}
        self.saves = 0

    def load(self, cascade_id: str) -> Cursor | None:
        cursor = self._cursors.get(cascade_id)
        return cursor.model_copy(deep=True) if cursor is not None else None

    def save(self, cursor: Cursor) -> None:
        self.saves += 1
        self._cursors[cursor.cascade_id] = cursor.model_copy(deep=True)
