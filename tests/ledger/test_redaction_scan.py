"""The decision ledger's free-text redaction (:func:`agy_harness.core.decision_record.redact`) runs
a rule only over text it could match: a 4 MiB command line with no ``://``, no ``=``/``:`` and no
key word used to be scanned by each rule (about 2 s of CPU for one decision record, 6 s on a busy
machine: the largest part of a gate's CPU in a py-spy profile of the suite). What it returns is
unchanged: the same text out as every rule run over every text (the property below, with the
characters ``re``'s case folding treats as ASCII letters -- ``ſ`` is an ``s``, the Kelvin sign a
``k`` -- among the inputs)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.adapters.policy.secrets import redact_command
from agy_harness.core import decision_record as D

BIG = "echo " + "x" * ((4 << 20) - 4096)


def every_rule(text: str, *, spoken: bool = True) -> str:
    """:func:`D.redact` as it was: every rule over every text."""
    text = D._USER_INFO.sub(D._mask, text)
    text = D._SECRET_KEY.sub(D._mask, text)
    if spoken:
        text = D._SPOKEN_KEY.sub(D._mask, text)
    return D._LONG_WORD.sub(lambda m: f"<redacted {len(m.group(0))} chars>", text)


class Counted:
    """A rule that counts the texts it scanned."""

    def __init__(self, rule: re.Pattern[str]) -> None:
        self.rule = rule
        self.scanned = 0

    def sub(self, repl: object, text: str) -> str:
        self.scanned += 1
        return self.rule.sub(repl, text)  # type: ignore[call-overload,no-any-return]


def test_a_huge_command_no_rule_can_match_is_not_scanned_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = {name: Counted(getattr(D, name)) for name in ("_USER_INFO", "_SECRET_KEY", "_SPOKEN_KEY")}
    for name, counted in rules.items():
        monkeypatch.setattr(D, name, counted)
    masked = f"echo <redacted {len(BIG) - 5} chars>"  # (one long random-looking word)
    assert redact_command(BIG) == masked
    assert D.redact(BIG) == masked
    assert {name: c.scanned for name, c in rules.items()} == {
        "_USER_INFO": 0,
        "_SECRET_KEY": 0,
        "_SPOKEN_KEY": 0,
    }
    cut = f"{BIG} \u22ef cut: 12 more bytes, sha256:0a1b \u22ef"  # (a cut mark: non-ASCII, a colon)
    assert D.redact(cut, spoken=False).endswith(" \u22ef cut: 12 more bytes, sha256:0a1b \u22ef")
    assert sum(c.scanned for c in rules.values()) == 0
    # and where a rule could match, it still runs and masks
    assert D.redact("curl https://bob:Pw1x@h/ -H 'token: abc' ; password hunter2") == (
        "curl https://bob:<redacted 4 chars>@h/ -H 'token: <redacted 3 chars>' ; password <redacted 7 chars>"
    )
    assert {name: c.scanned for name, c in rules.items()} == {
        "_USER_INFO": 1,
        "_SECRET_KEY": 1,
        "_SPOKEN_KEY": 1,
    }


PIECES = st.sampled_from(
    [
        "password", "PassWD", "pasſword", "ſecret", "SECRET", "ToKeN", "api_key", "Api-Key", "apikey",
        "access_key", "private-key", "AUTH", "Authorization", "db_pwd", "PWD", "\u212auth", "bearer ",
        "Basic ", "://", "https://", "u:p@h/", "@", "/", ":", "=", " ", "\t", "\n", "'", '"', ";", "x", "K",
        "é", "ı", "İ", "⋯", "0", "_", "-", "A" * 40, "hunter2",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=14).map("".join), st.booleans())
def test_redact_is_every_rule_over_every_text(text: str, spoken: bool) -> None:
    assert D.redact(text, spoken=spoken) == every_rule(text, spoken=spoken)
