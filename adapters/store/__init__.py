"""Cursor stores: where the harness remembers what it delivered, per cascade (imported from
:mod:`.cursor_file` when first named: the decision ledger's modules here, which ``agy-harness audit``
reads, need none of it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cursor_file import FileCursorStore, MemoryCursorStore, cursor_file_name

__all__ = ["FileCursorStore", "MemoryCursorStore", "cursor_file_name"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import cursor_file

        return getattr(cursor_file, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
