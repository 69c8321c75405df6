"""Carriage returns in what agy says and what a command printed, shown as a terminal shows them. Pure.

agy's replies and tool output may carry ``\\r\\n`` line ends (a Windows tool, agy quoting one) and
progress lines redrawn with a bare ``\\r`` (``pip``, ``curl``, ``git clone``: ``10%\\r 55%\\r100%``).
Escaped by :func:`agy_harness.core.display.visible`, each showed as a literal ``\\r`` (the board's
replies, issue 47). A user expects what the same output shows in a terminal: ``\\r\\n`` is a line end,
and a bare ``\\r`` returns to the line's start, the text after it overwriting what was there
character by character (what is longer survives past it: ``100%\\r 5`` reads `` 50%``).

Only reply text and output get this: a command line, a path or any text a human approves keeps every
``\\r`` visible (what runs is shown exactly, :mod:`.display`).
"""

from __future__ import annotations

from agy_harness.ports.events import AssistantMessage, Event, ReasoningDelta, TextDelta, ToolResult

__all__ = ["as_printed", "printed_event"]


def as_printed(text: str) -> str:
    """``text`` as a terminal leaves it: CRLF a line end, each bare CR overwriting from the line's start."""
    if "\r" not in text:
        return text
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(_overwritten(line) if "\r" in line else line for line in lines)


def _overwritten(line: str) -> str:
    shown = ""
    for part in line.split("\r"):
        shown = part + shown[len(part) :]
    return shown


def printed_event(event: Event) -> Event:
    """``event`` with its reply text or output :func:`as_printed` (any other event as it is). A delta
    is taken alone: a ``\\r`` that overwrites an earlier delta's text is only undone by the whole
    message that follows (the board shows it in the delta's place; a terminal prints the deltas)."""
    match event:
        case TextDelta() | ReasoningDelta() if "\r" in event.delta:
            return event.model_copy(update={"delta": as_printed(event.delta)})
        case AssistantMessage() if "\r" in event.text:
            return event.model_copy(update={"text": as_printed(event.text)})
        case ToolResult() if "\r" in event.output:
            return event.model_copy(update={"output": as_printed(event.output)})
        case _:
            return event
