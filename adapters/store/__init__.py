"""Cursor stores: where the harness remembers what it delivered, per cascade."""

from .cursor_file import FileCursorStore, MemoryCursorStore, cursor_file_name

__all__ = ["FileCursorStore", "MemoryCursorStore", "cursor_file_name"]
