"""How agy-controlled text is shown to a human: the one rendering rule of every front end (the terminal,
ACP titles and bodies, omnigent's cards). Pure.

What a human approves must be what runs, so the rendering is *visible* and *injective*: two different
texts never look the same.

* :func:`visible` -- every character that a terminal or a browser would act on, hide or draw as
  nothing becomes a visible escape: C0/C1 controls but ``\\n`` and ``\\t`` (``\\x1b``, ``\\r``), every
  Unicode format character (category Cf: bidi marks, embeddings, overrides and isolates, ZWJ/ZWNJ,
  word joiners, the TAG block U+E0000-E007F...), line and paragraph separators, surrogates, private
  use and unassigned code points, every space other than U+0020, variation selectors, the combining
  grapheme joiner, Hangul fillers and the braille blank (``\\u200d``, ``\\U000e0041``, ``\\u3164``). A
  backslash that would otherwise read as the start of such an escape is doubled, so a literal
  ``\\x1b`` typed by agy and a real ESC never look alike.
* :func:`command_view` -- a command line as a card shows it at the moment of asking: runs of blank
  lines collapsed with a count, over-long runs of spaces collapsed with a count, an over-tall command
  cut with a visible marker (its head and its tail kept), an over-wide line too, and its first line to repeat beside the
  prompt (:attr:`CommandView.first_line`), or all of it on one line for a title
  (:meth:`CommandView.title`). Markers are ``⋯ ... ⋯`` lines; on one line, a line break is ``⏎`` and
  a tab ``⇥``. Where the text itself holds ``⋯``, ``⏎`` or ``⇥`` they are escaped: agy cannot forge
  a marker or a line break.
* :func:`one_line` -- any text for a one-line title (a question, a tool name).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

#: characters shown as an escape although their category would pass: invisible or blank when drawn
_INVISIBLE = frozenset(
    "\u034f"  # combining grapheme joiner
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers
    "\u2800"  # braille pattern blank
    "\u17b4\u17b5"  # Khmer inherent vowels (invisible)
    "\u180b\u180c\u180d\u180f"  # Mongolian free variation selectors
)
_PLAIN = re.compile(r"[ -\[\]-~\n\t]*")
_SHORT = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}
_ESCAPE_LEADS = frozenset("xuUrvf\\")
MARKER = "⋯"


def _unsafe(char: str) -> bool:
    if char in ("\n", "\t", " "):
        return False
    code = ord(char)
    if 0x20 < code < 0x7F:
        return False  # printable ASCII (the common case)
    if char in _INVISIBLE or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True  # invisible although not a format character (variation selectors included)
    category = unicodedata.category(char)
    return category[0] in ("C", "Z")  # Cc Cf Cs Co Cn, Zl Zp, and Zs other than the space


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


class _Shown(dict[str, str]):
    """char -> how it is shown (itself, or its escape); remembered, within bounds."""

    def __missing__(self, char: str) -> str:
        shown = _escape(char) if _unsafe(char) else char
        if len(self) < 65536:
            self[char] = shown
        return shown


_SHOWN = _Shown()


def visible(text: str) -> str:
    """``text`` with every control, format or invisible character shown as an escape (module doc)."""
    if _PLAIN.fullmatch(text):
        return text  # the common case: printable ASCII, line breaks and tabs, no backslash
    shown = _SHOWN
    if "\\" not in text:
        return "".join([shown[c] for c in text])
    parts = ["".join([shown[c] for c in part]) for part in text.split("\\")]
    out = [parts[0]]
    last = len(parts) - 1
    for k in range(1, len(parts)):
        part = parts[k]
        follows = part[:1] if part else ("" if k == last else "\\")
        # a backslash that would read as the start of an escape (or an escaped backslash) is doubled
        out.append("\\\\" if follows and follows in _ESCAPE_LEADS else "\\")
        out.append(part)
    return "".join(out)


_BLANK = re.compile(r"^[ \t]*$")
_SPACES = re.compile(r"[ \t]{24,}")
NEWLINE, TAB = "⏎", "⇥"  # line breaks and tabs on one line (a title)
LABEL_CHARS = 120  # the first line beside the prompt is cut past this (with a marker)
#: the glyphs a rendering adds: escaped where the text itself holds them, so they cannot be forged
_GLYPHS = str.maketrans({g: _escape(g) for g in (MARKER, NEWLINE, TAB)})


@dataclass(frozen=True, slots=True)
class CommandView:
    lines: tuple[str, ...]  # what the card shows, markers included
    first_line: str  # the command's first non-blank line (visible), to repeat beside the prompt
    total_lines: int  # how many lines the command has
    cut: bool  # lines were left out (a marker says how many)

    @property
    def prompt_label(self) -> str:
        """The first line for the prompt (cut with a marker past :data:`LABEL_CHARS`), with how many
        more lines the command has."""
        first = self.first_line
        if len(first) > LABEL_CHARS:
            first = f"{first[:LABEL_CHARS]} {MARKER} +{len(first) - LABEL_CHARS} chars {MARKER}"
        more = self.total_lines - 1
        return f"{first} (+{more} more line{'s' if more != 1 else ''})" if more else first

    def title(self, max_chars: int = 200) -> str:
        """The command on one line (``⏎`` between lines, ``⇥`` for a tab); when that is longer than
        ``max_chars``, its first line and how many more lines it has, cut with ``…``."""
        whole = NEWLINE.join(self.lines).replace("\t", TAB)
        if len(whole) <= max_chars:
            return whole
        label = self.prompt_label.replace("\t", TAB)
        return label if len(label) <= max_chars else label[: max_chars - 1] + "…"


def _spaces(match: re.Match[str]) -> str:
    return f" {MARKER} {len(match.group())} spaces {MARKER} "


def _blank_marker(n: int) -> str:
    return f"{MARKER} {n} blank lines {MARKER}"


def _wide(line: str, max_chars: int) -> str:
    """A line longer than ``max_chars``: its head and its tail, the middle replaced by a marker that
    says how much is not shown."""
    if len(line) <= max_chars:
        return line
    tail = max_chars // 4
    head = max_chars - tail
    return f"{line[:head]} {MARKER} {len(line) - head - tail} chars not shown {MARKER} {line[-tail:]}"


def command_view(command: str, max_lines: int = 12, max_chars: int = 400) -> CommandView:
    """``command`` as a card shows it (see the module doc): at most ``max_lines`` lines of at most
    about ``max_chars`` characters (longer ones cut in the middle with a marker)."""
    raw = visible(command).translate(_GLYPHS).split("\n")
    rows: list[str] = []
    blanks = 0
    for line in raw:
        if _BLANK.match(line):
            blanks += 1
            continue
        if blanks:
            rows.append(_blank_marker(blanks) if blanks > 1 else "")
            blanks = 0
        rows.append(_wide(_SPACES.sub(_spaces, line), max_chars))
    if blanks:
        rows.append(_blank_marker(blanks) if blanks > 1 else "")
    cut = len(rows) > max_lines
    if cut:
        tail = max(1, max_lines // 4)
        head = max(1, max_lines - tail - 1)
        hidden = len(rows) - head - tail
        rows = [*rows[:head], f"{MARKER} {hidden} more lines not shown {MARKER}", *rows[-tail:]]
    first = next((row for row in raw if not _BLANK.match(row)), "")
    return CommandView(tuple(rows), _SPACES.sub(_spaces, first), len(raw), cut)


def one_line(text: str) -> str:
    """``text`` for a one-line title: visible, its line breaks shown as ``⏎`` and tabs as ``⇥``."""
    return visible(text).translate(_GLYPHS).replace("\n", NEWLINE).replace("\t", TAB)
