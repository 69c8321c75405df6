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

Injective, also where text looks alike or is not shown whole (issue #35):

* every card of a command ends in a ``⋯ #1a2b3c4d ⋯`` line: the first 8 hex characters of the
  SHA-256 of the exact command text (:func:`request_hash`), also at the end of its title; two
  different commands never render the same card, whatever look-alike characters they hold;
* what a card leaves out says what it hides: a cut line's middle and a tall command's middle lines
  carry the hash of the hidden text (``⋯ 37 chars not shown #0a1b2c3d4e5f6a7b ⋯``), and a command the
  reader cut past 4 MiB (:mod:`.cut_marks`) gets a line saying so, with the removed part's size and
  the whole string's size and hash (such a request can be denied, never allowed: :func:`agy_harness.core.answers.parse_answer`);
* look-alike text is flagged under the command (:func:`agy_harness.core.lookalikes.notes`): each
  non-ASCII character with its code point and name, tokens mixing scripts, text that NFC
  normalisation changes, punycode hosts; :func:`path_notes` gives the same lines for a path, and
  :func:`label_notes` for a question's text or an option (:func:`flagged`: the label on one line
  with them), so a question whose option reads ``gіthub.com`` says so on every surface.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from dataclasses import dataclass

from .cut_marks import cuts_in_text, without_cuts
from .lookalikes import WARN, notes

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


#: a run of plain characters long enough to be skipped as a whole (it needs no escape); it starts
#: where a plain run starts, so a search never rescans a short run from each of its characters
_PLAIN_RUN = re.compile(r"(?<![ -\[\]-~\n\t])([ -\[\]-~\n\t]{16,})")


def _shown(text: str, after: str) -> str:
    """``text`` shown character by character; ``after`` is the character that follows it ("" at the
    end), which decides whether a last backslash is doubled."""
    shown = _SHOWN
    if "\\" not in text:
        return "".join([shown[c] for c in text])
    parts = ["".join([shown[c] for c in part]) for part in text.split("\\")]
    out = [parts[0]]
    last = len(parts) - 1
    for k in range(1, len(parts)):
        part = parts[k]
        follows = part[:1] if part else (after if k == last else "\\")
        # a backslash that would read as the start of an escape (or an escaped backslash) is doubled
        out.append("\\\\" if follows and follows in _ESCAPE_LEADS else "\\")
        out.append(part)
    return "".join(out)


def visible(text: str) -> str:
    """``text`` with every control, format or invisible character shown as an escape (module doc)."""
    if _PLAIN.fullmatch(text):
        return text  # the common case: printable ASCII, line breaks and tabs, no backslash
    # long plain runs are kept as they are (a regex skips them); only what lies between them is
    # looked at character by character: a 4 MiB command with one marker in it costs a scan, not a
    # Python step per character (0.25 s -> 0.04 s), and text with no long plain run costs as before
    pieces = _PLAIN_RUN.split(text)  # [other, plain, other, plain, ..., other]
    last = len(pieces) - 1
    for i in range(0, last + 1, 2):
        if pieces[i]:  # what follows it is a plain run's first character (or nothing)
            pieces[i] = _shown(pieces[i], pieces[i + 1][:1] if i < last else "")
    return "".join(pieces)


_BLANK = re.compile(r"^[ \t]*$")
_SPACES = re.compile(r"[ \t]{24,}")
NEWLINE, TAB = "⏎", "⇥"  # line breaks and tabs on one line (a title)
LABEL_CHARS = 120  # the first line beside the prompt is cut past this (with a marker)
#: the glyphs a rendering adds: escaped where the text itself holds them, so they cannot be forged
_GLYPHS = tuple((g, _escape(g)) for g in (MARKER, NEWLINE, TAB))


def _unforgeable(text: str) -> str:
    """``text`` (already :func:`visible`) with the glyphs a rendering adds escaped. (Three C-level
    replaces: ``str.translate`` with a mapping takes a Python-level lookup per character, 0.45 s on a
    4 MiB command, and the board renders one on every card it builds.)"""
    for glyph, escaped in _GLYPHS:
        if glyph in text:
            text = text.replace(glyph, escaped)
    return text


@dataclass(frozen=True, slots=True)
class CommandView:
    lines: tuple[str, ...]  # what the card shows, markers included (its flags and hash last)
    first_line: str  # the command's first non-blank line (visible), to repeat beside the prompt
    total_lines: int  # how many lines the command has
    cut: bool  # lines were left out (a marker says how many)
    hash: str = ""  # ``#`` and the first 8 hex of the command's SHA-256 (:func:`request_hash`)
    flags: tuple[str, ...] = ()  # look-alike and cut notes (also in ``lines``, as marker lines)

    @property
    def prompt_label(self) -> str:
        """The first line for the prompt (cut with a marker past :data:`LABEL_CHARS`), with how many
        more lines the command has."""
        first = self.first_line
        if len(first) > LABEL_CHARS:
            hidden = _hidden_hash(first[LABEL_CHARS:])
            first = f"{first[:LABEL_CHARS]} {MARKER} +{len(first) - LABEL_CHARS} chars {hidden} {MARKER}"
        more = self.total_lines - 1
        label = f"{first} (+{more} more line{'s' if more != 1 else ''})" if more else first
        return f"{label}{self._suffix}"

    @property
    def body(self) -> tuple[str, ...]:
        """:attr:`lines` without the flags and the hash: the command alone (its markers kept), for a
        field that carries the command text, the flags and hash going to the field beside it."""
        return self.lines[: len(self.lines) - len(self.flags) - (1 if self.hash else 0)]

    @property
    def tail(self) -> str:
        """What :meth:`title` ends in after the command: how many warnings, the hash (a leading space)."""
        return self._suffix

    @property
    def _suffix(self) -> str:
        warn = f" {WARN} {len(self.flags)} warning{'s' if len(self.flags) != 1 else ''}" if self.flags else ""
        return f"{warn} {self.hash}" if self.hash else warn

    def title(self, max_chars: int = 200) -> str:
        """The command on one line (``⏎`` between lines, ``⇥`` for a tab), its hash (and how many
        warnings its card has) at the end; when that is longer than ``max_chars``, its first line and
        how many more lines it has, cut with ``…`` (the hash kept)."""
        suffix = self._suffix
        body = self.lines[: len(self.lines) - len(self.flags) - (1 if self.hash else 0)]
        whole = NEWLINE.join(body).replace("\t", TAB) + suffix
        if len(whole) <= max_chars:
            return whole
        label = self.prompt_label.replace("\t", TAB)
        if len(label) <= max_chars:
            return label
        room = max(1, max_chars - len(suffix) - 1)
        return label[: len(label) - len(suffix)][:room] + "…" + suffix


def _spaces(match: re.Match[str]) -> str:
    return f" {MARKER} {len(match.group())} spaces {MARKER} "


_SPACE_RUN = " " * 24


def _collapsed(line: str) -> str:
    """``line`` with its over-long runs of spaces and tabs collapsed (:data:`_SPACES`). A line with no
    tab and no run of 24 spaces has none (two C-level searches: the regex scanned a 4 MiB line in
    0.2 s, and a card of it does so twice)."""
    if "\t" not in line and _SPACE_RUN not in line:
        return line
    return _SPACES.sub(_spaces, line)


def _blank_marker(n: int) -> str:
    return f"{MARKER} {n} blank lines {MARKER}"


HASH_CHARS = 8  # hex characters of a card's request hash
HIDDEN_HASH_CHARS = 16  # hex characters of the hash of a part a card leaves out


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def request_hash(command: str) -> str:
    """``#`` and the first :data:`HASH_CHARS` hex characters of the SHA-256 of ``command`` exactly
    as agy sent it (UTF-8): what tells two look-alike cards apart."""
    return "#" + _sha256(command)[:HASH_CHARS]


def _hidden_hash(text: str) -> str:
    return "#" + _sha256(text)[:HIDDEN_HASH_CHARS]


def _wide(line: str, max_chars: int) -> str:
    """A line longer than ``max_chars``: its head and its tail, the middle replaced by a marker that
    says how much is not shown and the hash of what it hides."""
    if len(line) <= max_chars:
        return line
    tail = max_chars // 4
    head = max_chars - tail
    hidden = _hidden_hash(line[head:-tail])
    return (
        f"{line[:head]} {MARKER} {len(line) - head - tail} chars not shown {hidden} {MARKER} {line[-tail:]}"
    )


def _note_line(note: str) -> str:
    return f"{MARKER} {_unforgeable(visible(note))} {MARKER}"


def _drawn(char: str) -> bool:
    return _SHOWN[char] == char and char not in (MARKER, NEWLINE, TAB)


def text_notes(text: str) -> list[str]:
    """What a card says under ``text`` besides it (module doc): a cut by the reader (size and hash of
    the removed part), then the look-alike notes; each is plain text (not yet made visible)."""
    out = [
        f"{WARN} cut: {cut.removed} more bytes not shown (whole {cut.total} bytes, sha256:{cut.short}); "
        "it can be denied, not allowed"
        for cut in cuts_in_text(text)
    ]
    return out + notes(without_cuts(text), _drawn)


def path_notes(path: str) -> list[str]:
    """The notes a card shows under a path or a URL (a working directory, a file to write), each a
    visible marker line (``⋯ ⚠ non-ASCII: ... ⋯``); none for a plain ASCII path."""
    return [_note_line(note) for note in text_notes(path)]


def label_notes(text: str) -> list[str]:
    """The notes a card shows beside a label -- a question's text, an option -- each a visible marker
    line (``⋯ ⚠ non-ASCII: і U+0456 ... ⋯``): its look-alike characters, and a cut by the reader
    (its size and hash); none for plain ASCII. Two labels that look alike never read the same."""
    out = [
        f"{WARN} cut: {cut.removed} more bytes not shown (whole {cut.total} bytes, sha256:{cut.short})"
        for cut in cuts_in_text(text)
    ]
    return [_note_line(note) for note in out + notes(without_cuts(text), _drawn)]


def flagged(text: str) -> str:
    """``text`` on one line (:func:`one_line`), its :func:`label_notes` after it: a question or an
    option where a surface has one line for it (an ACP option's name, a form's title)."""
    return " ".join([one_line(text), *label_notes(text)])


def command_view(command: str, max_lines: int = 12, max_chars: int = 400) -> CommandView:
    """``command`` as a card shows it (see the module doc): at most ``max_lines`` lines of at most
    about ``max_chars`` characters (longer ones cut in the middle with a marker).

    Computed once per exact content: a card is built again for the same request on every surface
    and every board snapshot (0.3-1.2 s for a 4 MiB command), and a :class:`CommandView` is immutable.
    The last :data:`VIEWS_KEPT` are kept, keyed by the command itself (equal text, equal view: an
    exact comparison, never a digest standing in for the text)."""
    return _view(command, max_lines, max_chars)


VIEWS_KEPT = 8  # command views remembered (each holds its command, up to 4 MiB, and its lines)


@functools.lru_cache(maxsize=VIEWS_KEPT)
def _view(command: str, max_lines: int, max_chars: int) -> CommandView:
    raw = _unforgeable(visible(command)).split("\n")
    rows: list[str] = []
    blanks = 0
    for line in raw:
        if _BLANK.match(line):
            blanks += 1
            continue
        if blanks:
            rows.append(_blank_marker(blanks) if blanks > 1 else "")
            blanks = 0
        rows.append(_wide(_collapsed(line), max_chars))
    if blanks:
        rows.append(_blank_marker(blanks) if blanks > 1 else "")
    cut = len(rows) > max_lines
    if cut:
        tail = max(1, max_lines // 4)
        head = max(1, max_lines - tail - 1)
        hidden = len(rows) - head - tail
        hash_ = _hidden_hash("\n".join(rows[head:-tail]))
        rows = [*rows[:head], f"{MARKER} {hidden} more lines not shown {hash_} {MARKER}", *rows[-tail:]]
    first = next((row for row in raw if not _BLANK.match(row)), "")
    flags = tuple(_note_line(note) for note in text_notes(command))
    hash_ = request_hash(command)
    rows += [*flags, f"{MARKER} {hash_} {MARKER}"]
    return CommandView(tuple(rows), _collapsed(first), len(raw), cut, hash_, flags)


def one_line(text: str) -> str:
    """``text`` for a one-line title: visible, its line breaks shown as ``⏎`` and tabs as ``⇥``."""
    return _unforgeable(visible(text)).replace("\n", NEWLINE).replace("\t", TAB)
