"""The scripted model finds its keywords where they start (adapters/simulator/scenarios.py's
``_keyword_matches``: tried at each word's start), exactly as a search of the whole text finds them."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agy_harness.adapters.simulator.scenarios import _COMPILED, _FEW_WORDS, _keyword_matches, plan_for

WORDS = [
    "run",
    "Run",
    "auto-run",
    "kind:",
    "ask",
    "question",
    "list",
    "view",
    "cat",
    "read the file",
    "sub-agent",
    "write a file",
    "edit the file",
    "make a plan",
    "long",
    "STORY",
    "-run",
    "x",
    "é",
    "_",
    "`",
    "\n",
    " ",
    "-",
    ":",
]


def whole_text(text: str) -> list[tuple[int, int, str]]:
    return sorted((m.start(), m.end(), kind) for kind, pattern in _COMPILED for m in pattern.finditer(text))


def test_every_pattern_starts_at_a_word() -> None:
    """What the search by word starts relies on: each pattern begins with ``\\b`` and a letter."""
    for _, pattern in _COMPILED:
        for branch in pattern.pattern.split("|\\b"):
            assert re.match(r"(?:\\b)?(?:\(\?<!-\))?\(?(?:\?:)?[a-z]", branch), pattern.pattern


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS) | st.text(max_size=4), max_size=40).map("".join))
@example("run `cat notes.txt` and view README.md, then write a long story")
@example("auto-run: ls; autorun ls; -run x; kind: fileReview a b\nmake a task list")
def test_the_matches_are_the_whole_texts(text: str) -> None:
    assert _keyword_matches(text) == whole_text(text)


def test_a_turn_of_many_words_is_searched_whole() -> None:
    text = "run ls " + "word " * (_FEW_WORDS + 10) + "and view README.md"
    assert _keyword_matches(text) == whole_text(text)


def test_a_four_mib_command_is_one_word_and_still_read() -> None:
    text = "run `echo " + "x" * (4 << 20) + "; ls` then list it, a long one"
    assert _keyword_matches(text) == whole_text(text)
    plan = plan_for(text)
    assert [a.kind for a in plan.actions] == ["run", "list"] and plan.long
