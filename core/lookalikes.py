"""Look-alike text made visible: what a card of a command, a path or a URL says besides the text. Pure.

Two texts that look the same are not always the same: ``github.com`` with a Cyrillic ``і``
(U+0456), ``café`` composed (NFC, U+00E9) and decomposed (NFD, ``e`` + U+0301, another directory on
Linux), a ``/`` that is a DIVISION SLASH. :func:`notes` names each such thing in one line a card shows
under the text (used by :func:`agy_harness.core.display.command_view`, so every surface has them):

* ``⚠ non-ASCII: і U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I`` -- each distinct non-ASCII
  character (letters, marks, digits, punctuation: anything :func:`~.display.visible` shows as itself),
  up to :data:`MAX_CHARS` of them, then how many more;
* ``⚠ mixed scripts in "gіthub.com": CYRILLIC, LATIN`` -- a token (a run without spaces) whose letters
  come from more than one script;
* ``⚠ not NFC: Unicode normalisation changes this text`` -- the text is not in the form NFC gives
  (a file named by it is not the file named by its composed look-alike);
* ``⚠ punycode host: xn--...`` -- an internationalised host name written in its ASCII form.

Text that is printable ASCII has no notes (the common case costs one ``isascii``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

MAX_CHARS = 6  # distinct non-ASCII characters named one by one
MAX_TOKENS = 4  # mixed-script tokens named one by one
TOKEN_CHARS = 60  # a named token is cut past this
WARN = "⚠"
_PUNYCODE = re.compile(r"(?i)(?<![0-9a-z-])xn--[0-9a-z-]{1,63}")
#: found by a regex, not a Python step per character: a 4 MiB command with a few non-ASCII
#: characters is read in C (0.3 s -> 0.02 s), and the board builds its card on every snapshot
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def script(char: str) -> str:
    """The script a letter belongs to, as the first word of its Unicode name (``LATIN``,
    ``CYRILLIC``, ``GREEK``...); '' for what is not a letter (marks, digits, punctuation)."""
    if char.isascii():
        return "LATIN" if char.isalpha() else ""
    if not unicodedata.category(char).startswith("L"):
        return ""
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else "UNNAMED"


def describe(char: str) -> str:
    """``і U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I`` (a combining mark is shown on a
    dotted circle, so it never joins the text around it)."""
    shown = f"\u25cc{char}" if unicodedata.combining(char) else char
    return f"{shown} U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"


def notes(text: str, shown_as_itself: Callable[[str], bool] | None = None) -> list[str]:
    """The look-alike notes of ``text`` (see the module doc). ``shown_as_itself(char)`` says which
    characters the display draws as themselves (the others are escaped already and not named)."""
    # (every punycode host holds ``xn--``, its letters ASCII of either case -- no other character
    # folds to an x or an n -- so text without it, case aside, is not scanned: 0.37 s on 4 MiB)
    hosts = _PUNYCODE.findall(text) if "xn--" in text.lower() else []
    out = [f"{WARN} punycode host: {', '.join(sorted(set(hosts)))[:TOKEN_CHARS]}"] if hosts else []
    if text.isascii():
        return out
    keep = shown_as_itself or (lambda char: True)
    # each distinct non-ASCII character, in the order it first appears
    chars = [char for char in dict.fromkeys(_NON_ASCII.findall(text)) if keep(char)]
    named = chars[:MAX_CHARS]
    for char in named:
        out.append(f"{WARN} non-ASCII: {describe(char)}")
    if len(chars) > len(named):
        out.append(f"{WARN} non-ASCII: {len(chars) - len(named)} more distinct characters")
    mixed: list[tuple[str, list[str]]] = []
    for token in text.split():
        if token.isascii():
            continue
        # an ASCII character's script is LATIN for a letter, none otherwise (:func:`script`)
        found = {s for s in map(script, set(_NON_ASCII.findall(token))) if s}
        if _ASCII_LETTER.search(token):
            found.add("LATIN")
        if len(found) > 1:
            mixed.append((token, sorted(found)))
    for token, names in mixed[:MAX_TOKENS]:
        cut = token if len(token) <= TOKEN_CHARS else token[:TOKEN_CHARS] + "…"
        out.append(f'{WARN} mixed scripts in "{cut}": {", ".join(names)}')
    if len(mixed) > MAX_TOKENS:
        out.append(f"{WARN} mixed scripts in {len(mixed) - MAX_TOKENS} more tokens")
    if not unicodedata.is_normalized("NFC", text):
        out.append(
            f"{WARN} not NFC: Unicode normalisation changes this text (a composed look-alike is another text)"
        )
    return out
