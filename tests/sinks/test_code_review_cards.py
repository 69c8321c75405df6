"""agy's file-edit review on the terminal (attach) and on omnigent: the terminal card shows the file
and its whole diff; omnigent's card cannot show a diff whole, so it offers Reject alone and refuses
any accept (an accept there would approve what no one saw)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agy_harness.adapters.sinks.omnigent.cards import NO_ACCEPT, choices, permission_fields
from agy_harness.adapters.sinks.omnigent.gates import answer_from_result
from agy_harness.adapters.sinks.terminal_cards import gate_card
from agy_harness.core.answers import AnswerError, Deny

from ..core.test_code_review import PATH, _gate, _raw


def test_the_terminal_card_shows_the_file_and_the_whole_diff() -> None:
    console = Console(record=True, width=100, color_system=None, force_terminal=False, file=io.StringIO())
    console.print(gate_card(_gate(_raw())))
    shown = [line.strip("│ ").rstrip() for line in console.export_text().splitlines()]
    assert f"agy asks to edit {PATH} (accept or reject its diff)" in shown
    at = shown.index("# notes.txt")
    assert shown[at : at + 6] == [
        "# notes.txt",
        "",
        "-The old line.",
        "+The new line.",
        "Kept as it is.",
        "+An added line.",
    ]


def test_omnigent_offers_reject_alone_and_says_where_to_accept() -> None:
    gate = _gate(_raw())
    assert [c.label for c in choices(gate)] == ["Reject"]
    fields = permission_fields(gate)
    assert fields["requestedSchema"]["properties"]["answer"]["enum"] == ["Reject"]
    assert NO_ACCEPT in fields["action_description"]
    rejected = answer_from_result(gate, {"action": "accept", "content": {"answer": "Reject"}})
    assert rejected.verdict == Deny()  # type: ignore[attr-defined]
    for accept in ({}, {"answer": "allow"}, {"answer": "yes"}, {"answer": "Allow once"}):
        with pytest.raises(AnswerError):
            answer_from_result(gate, {"action": "accept", "content": accept})
