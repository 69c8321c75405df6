"""Every command's ``--help``, wrapped to the terminal's width: rich-argparse's formatter (usage,
options) with the descriptions and examples laid out here.

The help texts are written once, in lines: a paragraph (unindented lines) is reflowed to the width; a
heading (``examples:``) stays; an indented line is one item, either ``command  explanation`` (two or
more spaces apart; a deeper-indented line below continues the explanation) or a sentence. An item that
fits stays as written; one that does not is wrapped with a hanging indent, the explanation under the
command when the two do not fit side by side. A word is never cut, whatever the width. rich is imported
only when help is formatted (``--version`` and parsing stay light).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from rich_argparse import RichHelpFormatter

GAP = re.compile(r"\S( {2,})\S")
HANG = 4  # the indent of a wrapped command's or sentence's next lines, under its first


@dataclass
class _Item:
    indent: int
    head: str  # the command, or the whole sentence
    column: int | None = None  # where the explanation starts in the source (None: a sentence)
    tail: list[str] = field(default_factory=list)  # the explanation's words, continuation lines too


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        max(width, len(first) + 1),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _item(item: _Item, width: int) -> list[str]:
    lead = " " * item.indent
    tail = " ".join(item.tail)
    if item.column is None and not tail:
        return _wrap(item.head, width, lead, lead + " " * HANG)
    column = item.column if item.column is not None else item.indent + HANG
    if not tail:
        return _wrap(item.head, width, lead, lead + " " * HANG)
    side = len(lead) + len(item.head) + 2 <= column and width - column >= 24
    if side:  # the command, then the explanation wrapped in its column
        first = (lead + item.head).ljust(column)
        return _wrap(tail, width, first, " " * column)
    under = " " * (item.indent + HANG + 2)
    return _wrap(item.head, width, lead, lead + " " * HANG) + _wrap(tail, width, under, under)


def layout(text: str, width: int) -> list[str]:
    """``text`` (a description or epilog, written in lines) laid out in ``width`` columns."""
    out: list[str] = []
    paragraph: list[str] = []
    items: list[_Item] = []

    def flush() -> None:
        if paragraph:
            out.extend(_wrap(" ".join(paragraph), width, "", ""))
            paragraph.clear()
        for item in items:
            out.extend(_item(item, width))
        items.clear()

    for line in text.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if not stripped:
            flush()
            out.append("")
        elif indent == 0:
            if items:
                flush()
            if stripped.endswith(":") and len(stripped.split()) <= 4:  # a heading, e.g. `exit codes:`
                flush()
                out.append(stripped)
            else:
                paragraph.append(stripped)
        elif items and indent > items[-1].indent + HANG:  # continues the item above
            items[-1].tail.append(stripped)
            if items[-1].column is None:
                items[-1].column = indent
        else:
            if paragraph:
                flush()
            gap = GAP.search(line, indent)
            if gap is None:
                items.append(_Item(indent, stripped))
            else:
                head, column = line[indent : gap.start(1)], gap.end(1)
                items.append(_Item(indent, head, column, [line[column:].strip()]))
    flush()
    while out and not out[-1]:
        out.pop()
    return out


class HelpFormatter(RichHelpFormatter):
    """rich-argparse's formatter (usage and options wrapped to the width), our texts laid out by
    :func:`layout`, headings as written (``options:``, ``examples:``), no console markup in texts
    (``[y/n]``, ``'agy-harness[acp]'`` are text)."""

    group_name_formatter = str
    text_markup = False
    help_markup = False

    def _rich_fill_text(self, text: Any, width: int, indent: Any) -> Any:
        from rich.text import Text

        lines = layout(text.plain, width)
        filled = Text("\n").join(Text(str(indent.plain) + line, style="argparse.text") for line in lines)
        for highlight in self.highlights:
            filled.highlight_regex(highlight, style_prefix="argparse.")
        return filled + "\n\n"


__all__ = ["HelpFormatter", "layout"]
