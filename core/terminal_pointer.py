"""The pointer to agy's own terminal, said once per card.

A card of a gate nothing here can answer tells the human where it can be answered: "answer in agy's
terminal". The core's card text (:func:`agy_harness.core.kinds.describe`) may end with that pointer;
a surface that says it itself (in the card's body, or in the note of a card shown again) takes the
text without it (:func:`without_pointer`), so each render of a card says it once (issue 45)."""

from __future__ import annotations

import re

POINTER = "answer in agy's terminal"
_TAIL = re.compile(r"\s*[—–-]+\s*answer (?:it )?in agy's terminal\W*$")


def without_pointer(text: str) -> str:
    """``text`` without a trailing "— answer in agy's terminal"."""
    return _TAIL.sub("", text).strip()
