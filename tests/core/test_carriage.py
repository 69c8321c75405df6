"""core.carriage: reply text and output as a terminal leaves it (issue 47's ``\\r`` in board replies)."""

from __future__ import annotations

import pytest

from agy_harness.core.carriage import as_printed


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain\ntext", "plain\ntext"),
        ("a\r\nb\r\n", "a\nb\n"),
        ("10%\r 55%\r100%\ndone", "100%\ndone"),
        ("100%\r 5", " 50%"),  # overwritten character by character: the longer tail survives
        ("ends in a CR\r", "ends in a CR"),
        ("\r\r\n", "\n"),
    ],
)
def test_as_printed(raw: str, shown: str) -> None:
    assert as_printed(raw) == shown
