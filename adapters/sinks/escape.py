"""Neutralise agy-controlled text before it reaches a terminal: what the human sees is what agy runs.

Every string agy controls (assistant text, deltas, tool arguments and output, gate cards, notices) may
carry terminal control sequences: an erase-line + carriage return inside a proposed command can make
an approval card show ``$ ls -la`` while agy will run ``rm -rf ~/work``; OSC sequences set the title or
write the clipboard; DCS, alternate-screen and clear-screen sequences repaint the screen; format and
invisible characters (bidi overrides, ZWJ/ZWNJ, the TAG block, Hangul fillers) make two different
command lines look the same. So before rendering, every such character is replaced by a visible
escape by the core's one rendering rule (:func:`agy_harness.core.display.visible`, also used by the ACP
agent and the omnigent cards): ``\\x1b``, ``\\r``, ``\\u202e``, ``\\U000e0041``. ``\\n`` and ``\\t`` stay as they
are: a multi-line command shows every line. A backslash that would read as an escape is doubled, so
nothing agy writes can pass for an escaped control, and nothing reaches the terminal as a control.

The terminal sink calls :func:`visible_event` on every event it renders and :func:`visible` on every
other string it prints (the answer echo, the demo's narration). Keep calling them when restyling.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from agy_harness.core.display import visible

__all__ = ["visible", "visible_event", "visible_value"]

_MAX_DEPTH = 32

E = TypeVar("E", bound=BaseModel)


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
