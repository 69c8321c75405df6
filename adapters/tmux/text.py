"""What may be typed into agy's composer: exactly the caller's text, or a clear error before typing."""

from __future__ import annotations

import unicodedata


def turn_text(text: str) -> str:
    """``text`` as it will be typed (CRLF and CR become LF: a TUI takes CR as Enter).

    Raises ValueError, before anything is typed, for what cannot be delivered exactly: an empty
    turn, a lone surrogate (not encodable), or a control character other than LF and TAB (ESC could
    end the bracketed paste early, ^C clears the composer, ...). Everything else, ``;`` and
    backslashes and any Unicode included, is delivered byte for byte.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            raise ValueError(
                f"cannot type a lone surrogate (U+{ord(ch):04X} at character {i}): it is not encodable"
                " text; nothing was typed"
            )
        if ch not in "\n\t" and unicodedata.category(ch) == "Cc":
            raise ValueError(
                f"cannot type the control character U+{ord(ch):04X} (at character {i}) into agy's"
                " composer; nothing was typed"
            )
    if not text.strip():
        raise ValueError("refusing to send an empty turn; nothing was typed")
    return text
