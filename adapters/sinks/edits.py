"""What an editing tool proposes, as diff rows: shared by the terminal's cards and the board's page.

``write_to_file`` shows its new content as added lines; ``replace_file_content`` /
``multi_replace_file_content`` each chunk's old -> new as a unified diff (one line of context).
Rows are ``(kind, text)`` with kind ``add`` / ``del`` / ``ctx`` / ``gap`` (between chunks) /
``more`` (the cut marker); a front end only styles them.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

MAX_DIFF_LINES = 24
PATH_KEYS = ("AbsolutePath", "TargetFile", "DirectoryPath", "SearchPath", "FilePath", "path", "file_path")

DiffRow = tuple[str, str]


def first(arguments: dict[str, Any], keys: Sequence[str]) -> str:
    """The first of ``keys`` that ``arguments`` holds as non-empty text."""
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _rows(old: str, new: str) -> list[DiffRow]:
    rows: list[DiffRow] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1):
        if line.startswith(("---", "+++")):
            continue
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx"
        rows.append((kind, line))
    return rows


def cap(rows: list[DiffRow], limit: int = MAX_DIFF_LINES) -> list[DiffRow]:
    if len(rows) <= limit:
        return rows
    return [*rows[: limit - 1], ("more", f"… {len(rows) - limit + 1} more lines")]


def edit_rows(args: dict[str, Any], limit: int = MAX_DIFF_LINES) -> list[DiffRow] | None:
    """The change an editing tool's ``args`` propose; None when they are not an edit."""
    path = first(args, ("TargetFile", "AbsolutePath", "FilePath", "path"))
    content = args.get("CodeContent")
    if isinstance(content, str) and path:
        return cap([("add", f"+{line}") for line in content.splitlines()], limit)
    chunks = args.get("ReplacementChunks")
    if not isinstance(chunks, list):
        chunks = [args] if "TargetContent" in args else None
    if not chunks or not path:
        return None
    rows: list[DiffRow] = []
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        old, new = chunk.get("TargetContent"), chunk.get("ReplacementContent")
        if isinstance(old, str) and isinstance(new, str):
            if rows:
                rows.append(("gap", "⋯"))
            rows.extend(_rows(old, new))
    return cap(rows, limit) if rows else None
