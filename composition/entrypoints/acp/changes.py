"""The change a gate is about, shown on its card the way an editor shows its own agent's edits.

agy's gates that concern a file carry the file's URI in their request (``fileReview.targetFileUri``
in the simulator's file-write review, a guessed field; a file permission's ``absolutePathUri``; a
permission's ``target``). The card gets:

* a ``location`` for that path (the editor can open it);
* an ACP ``diff`` block (``{type: "diff", path, oldText, newText}``) where agy's request gives the
  change whole: a unified diff that only adds lines is a new file (``oldText`` null, ``newText`` the
  added lines). Where the client offers ``fs.readTextFile``, the current text is read through
  ``fs/read_text_file`` (the editor's buffer, unsaved edits included; its first line only, for at
  most :data:`READ_SECONDS`): a file that has text, or an editor that did not answer in time, is
  then no new file, and the diff is not shown as one;
* agy's file-edit review (:mod:`agy_harness.core.code_review`): the ``diff`` block of its request's
  ``oldText`` / ``newText`` (the lines of agy's unified diff, unchanged ones in both; ``oldText``
  null for a file the edit creates);
* otherwise a line that says what there is to see: agy's own diff text, verbatim in a code block
  (the display rule's body), or that agy's request carries no change to show.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import helpers as h
from acp.schema import ContentToolCallContent, FileEditToolCallContent, ToolCallLocation

from agy_harness.core import code_review
from agy_harness.ports.events import GateOpened

from .listing import path_of
from .mapping import code_block, text_content

log = logging.getLogger("agy_harness.acp.changes")

_URI_FIELDS = ("targetFileUri", "absolutePathUri", "fileUri", "uri")
NOTHING_TO_SHOW = "agy's request carries no change to show here: only the path above."
#: how long the editor may take to say whether the file has text (its first line only); past it the
#: card goes out with agy's diff as agy gives it: a read never holds the session's updates
READ_SECONDS = 5.0
UNKNOWN = "?"  # the editor did not answer: whether the file exists is not known

Content = ContentToolCallContent | FileEditToolCallContent


def gate_path(gate: GateOpened) -> str | None:
    inner = gate.request
    for value in inner.values() if isinstance(inner, dict) else ():
        if isinstance(value, dict):
            for field in _URI_FIELDS:
                uri = value.get(field)
                if isinstance(uri, str) and (path := path_of(uri)):
                    return path
    for field in _URI_FIELDS:
        uri = inner.get(field) if isinstance(inner, dict) else None
        if isinstance(uri, str) and (path := path_of(uri)):
            return path
    p = gate.permission
    if p is not None and not p.command_line and p.target and (path := path_of(p.target)):
        return path
    return None


def agys_diff(gate: GateOpened) -> str:
    """agy's diff text in the request (the interaction's value, or one level down)."""
    for value in (gate.request, *gate.request.values()):
        if isinstance(value, dict) and isinstance(value.get("diff"), str):
            return str(value["diff"])
    return ""


def added_only(diff: str) -> str | None:
    """The new file's text when ``diff`` only adds lines (``+`` lines, no hunk of an existing file)."""
    lines = diff.splitlines(keepends=True)
    if not lines or any(not line.startswith("+") or line.startswith("+++") for line in lines):
        return None
    return "".join(line[1:] for line in lines)


async def gate_change(
    gate: GateOpened, read_text: Any = None
) -> tuple[list[Content], list[ToolCallLocation] | None]:
    """The card's content and locations for ``gate`` (see the module doc); ``read_text(path)`` is the
    client's ``fs/read_text_file`` when it offers it (else None)."""
    path = gate_path(gate)
    if path is None:
        return [], None
    locations = [ToolCallLocation(path=path)]
    if code_review.is_review(gate):  # agy's file-edit review: its whole diff, as the editor shows edits
        old = gate.request.get("oldText")
        new = str(gate.request.get("newText") or "")
        return [h.tool_diff_content(path, new, old if isinstance(old, str) else None)], locations
    diff = agys_diff(gate)
    new_text = added_only(diff) if diff else None
    if new_text is not None:
        current = None
        if read_text is not None:
            try:
                async with asyncio.timeout(READ_SECONDS):
                    current = await read_text(path)
            except TimeoutError:  # the editor did not say: no claim that the file is new
                log.warning("fs/read_text_file %s: no answer within %gs", path, READ_SECONDS)
                current = UNKNOWN
            except Exception as exc:  # no such file (a new one), or the client refused: agy's diff stands
                log.debug("fs/read_text_file %s: %s", path, exc)
        if not current:
            return [h.tool_diff_content(path, new_text, None)], locations
    said: list[Content] = []
    said += text_content("agy's change (as agy gives it):\n" + code_block(diff) if diff else NOTHING_TO_SHOW)
    return said, locations
