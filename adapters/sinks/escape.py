"""Neutralise agy-controlled text before it reaches a terminal: what the human sees is what agy runs.

Every string agy controls (assistant text, deltas, tool arguments and output, gate cards, notices) may
carry terminal control sequences: an erase-line + carriage return inside a proposed command can make
an approval card show ``$ ls -la`` while agy will run ``rm -rf ~/work``; OSC sequences set the title or
write the clipboard; DCS, alternate-screen and clear-screen sequences repaint the screen. So before
rendering, every control character is replaced by a visible escape (``\\x1b``, ``\\r``, ``\\x07``,
``\\x9b``), as are bidirectional-override and other invisible format characters that reorder or hide
what is shown (``\\u202e``), line/paragraph separators and lone surrogates (which a terminal cannot
encode). ``\\n`` and ``\\t`` stay as they are: a multi-line command shows every line. A backslash stays a
backslash, so ``\\x1b`` typed literally and an escaped ESC look the same -- the point is that nothing
is hidden, and nothing reaches the terminal as a control.

The terminal sink calls :func:`visible_event` on every event it renders and :func:`visible` on every
other string it prints (the answer echo, the demo's narration). Keep calling them when restyling.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel

#: C0 controls but \t and \n, DEL, C1 controls, Unicode format characters that reorder or hide text
#: (bidi marks/embeddings/overrides/isolates, zero-width joiners aside), line/paragraph separators,
#: the BOM, interlinear annotations, and any surrogate (only lone ones survive into a str).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
_MAX_DEPTH = 32

E = TypeVar("E", bound=BaseModel)


_SHORT = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control/format character shown as a visible escape (see module doc)."""
    return _UNSAFE.sub(_escape, text)


def visible_value(value: Any, depth: int = 0) -> Any:
    """``value`` (JSON-like) with every string, key included, passed through :func:`visible`; nesting
    deeper than 32 levels is shown as a marker (a terminal card cannot show it anyway)."""
    if isinstance(value, str):
        return visible(value)
    if depth >= _MAX_DEPTH and isinstance(value, dict | list | tuple):
        return f"…(nested deeper than {_MAX_DEPTH} levels)"
    if isinstance(value, dict):
        return {visible(str(k)): visible_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(visible_value(v, depth + 1) for v in value)
    if isinstance(value, BaseModel):
        return visible_event(value)
    return value


def visible_event(event: E) -> E:
    """A display copy of ``event`` (any pydantic model) with every string field neutralised."""
    updates = {name: visible_value(getattr(event, name)) for name in type(event).model_fields}
    return event.model_copy(update=updates)
