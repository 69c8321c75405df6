"""A request's card (:func:`agy_harness.core.display.command_view`) is computed once per exact content:
every surface, and the board on every snapshot, builds the card of the same request again (1.2 s for a
4 MiB command before, in regex scans that could not match: a run of 24 spaces where there is none, a
punycode host in text without ``xn--``). Equal text gives the one view; text that differs anywhere
gets its own. The scans skipped are skipped only where they cannot match (the properties below:
the same card as the scans run everywhere)."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.core import display as D
from agy_harness.core import lookalikes as L

BIG = "x" * ((4 << 20) - 4096)


def test_the_card_of_one_content_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[int] = []
    render = D.visible

    def counted(text: str) -> str:
        rendered.append(len(text))
        return render(text)

    monkeypatch.setattr(D, "visible", counted)
    command = f"echo {uuid.uuid4()} {BIG}"  # (a content no other test rendered)
    again = "".join([command[:10], command[10:]])  # the same content, another string
    assert again is not command
    view = D.command_view(command)
    assert D.command_view(again) is view
    assert len([n for n in rendered if n >= len(BIG)]) == 1  # one pass over the text, not two
    other = D.command_view(command[:-1] + "y")  # differs in its last character: its own card
    assert other.hash != view.hash and other.lines != view.lines
    assert view.lines[-1] == f"{D.MARKER} {D.request_hash(command)} {D.MARKER}"
    assert D.command_view(command, 12, 100).lines != view.lines  # (the bounds are part of the key)


def every_scan(line: str) -> str:
    return D._SPACES.sub(D._spaces, line)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([" ", " " * 23, " " * 24, "\t", "x", "\n", "⏎"]), max_size=12).map("".join))
def test_spaces_are_collapsed_as_the_scan_everywhere_does(line: str) -> None:
    assert D._collapsed(line) == every_scan(line)


PUNY = re.compile(r"(?i)(?<![0-9a-z-])xn--[0-9a-z-]{1,63}")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["xn--", "XN--", "Xn-", "-", "n", "80ak6aa92e", ".com", " ", "é", "K", "ｘ", "ℕ", "⋯"]
        ),
        max_size=10,
    ).map("".join)
)
def test_punycode_hosts_are_found_as_the_scan_everywhere_does(text: str) -> None:
    hosts = PUNY.findall(text)
    said = [n for n in L.notes(text) if "punycode" in n]
    assert said == (
        [f"{L.WARN} punycode host: {', '.join(sorted(set(hosts)))[: L.TOKEN_CHARS]}"] if hosts else []
    )
