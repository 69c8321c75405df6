"""The reader against bash itself: for random lines the reader says it understood, every command bash
actually runs is one the reader listed (by name; with the same argv where the reader saw only literal
words). bash runs restricted (``bash -r``: no ``/`` in a command, no output redirection, no ``cd`` or
``exec``), in an empty directory, with a PATH of stubs that only record their argv; lines the reader did
not understand are never run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agy_harness.adapters.policy.shell import TreeSitterParser

PARSER = TreeSitterParser()
BASH = shutil.which("bash") or "bash"
NAMES = ("aa", "bb", "cc")
SEP, END = "\x1e", "\x1d"  # between arguments, after a command (an argument may hold a newline)
TOKENS = st.sampled_from([
    "aa", "bb", "cc", "x", "-f", " ", " ", " ", ";", "&&", "||", "|", "&", "\n", "'", '"', "\\", "$(", ")",
    "`", "#", "$x", "${x}", "$'", "{", "}", "(", "!", "<", "*", "=", "y=1 ", "\\\n", "$((1))", "''", '""',
    "$'a'", "$'\\''", "|&", "[[", "]]", "'\\''", '"\\""', "\\'", '\\"', "${x:-aa}",
])  # fmt: skip

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stubs")
    for name in NAMES:
        stub = root / name
        stub.write_text(
            # one write per record (a command in the background writes at the same time)
            f'#!/bin/sh\nrec=$(printf "%s{SEP}" "${{0##*/}}" "$@")\nprintf "%s{END}" "$rec" >> "$STUB_LOG"\n'
        )
        stub.chmod(0o755)
    return root


def ran(line: str, stubs: Path, where: Path) -> list[tuple[str, ...]] | None:
    log = where / "log"
    log.write_text("")
    env = {"PATH": str(stubs), "STUB_LOG": str(log), "HOME": str(where)}
    try:
        subprocess.run([BASH, "--norc", "-r", "-c", line], cwd=where, env=env, capture_output=True, timeout=5)
    except subprocess.TimeoutExpired:
        return None
    return [tuple(rec.split(SEP)[:-1]) for rec in log.read_text().split(END) if rec]


def _words(line: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    plain = st.sampled_from(["x", "-f", "'a b'", '"a b"', "\\x", "a\\ b", "$x", "''", "*", "{a,b}", "y=1",
                             "$'x\\ty'", "\"a'b\"", "'a\"b'", "\"a\\\"b\"", "a#b", "#c", "\\#d"])  # fmt: skip
    nested = st.one_of(
        line.map(lambda s: f"$({s})"), line.map(lambda s: f'"$({s})"'), line.map(lambda s: f"${{x:-$({s})}}"),
        st.sampled_from(NAMES).map(lambda n: f"`{n} q`"), line.map(lambda s: f"a$({s})b"),
    )  # fmt: skip
    return st.one_of(plain, plain, nested)


def _lines() -> st.SearchStrategy[str]:
    line = st.deferred(lambda: commands)
    command = st.tuples(
        st.sampled_from([*NAMES, "'aa'", "a\\a", 'b"b"', "{ aa; }", "(bb)", "! cc"]),
        st.lists(_words(line), max_size=3),
    ).map(lambda t: " ".join([t[0], *t[1]]))
    seps = st.sampled_from([";", " && ", " || ", " | ", " & ", "\n", " # ", ";\\\n"])
    commands = st.recursive(command, lambda inner: st.tuples(inner, seps, inner).map("".join), max_leaves=4)
    return commands


STRUCTURED = _lines()


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    line=st.one_of(
        st.lists(TOKENS, min_size=1, max_size=12).map("".join),  # token soup
        STRUCTURED,  # well-formed lines with substitutions, quoting and separators
        st.tuples(STRUCTURED, TOKENS, st.integers(0, 40)).map(lambda t: t[0][: t[2]] + t[1] + t[0][t[2] :]),
    )
)
def test_every_command_bash_runs_is_one_the_reader_listed(line: str, stubs: Path, tmp_path: Path) -> None:
    parsed = PARSER.parse(line)
    if not parsed.understood:
        return  # asked: never allowed, so nothing to compare
    where = tmp_path / "run"
    where.mkdir(exist_ok=True)
    for leftover in where.iterdir():
        leftover.unlink()
    executed = ran(line, stubs, where)
    if executed is None:
        return
    parts = [p for p in parsed.commands if p.argv]
    for argv in executed:
        same = [p for p in parts if p.argv[0] == argv[0]]
        assert same, f"{line!r}: bash ran {argv} and the reader listed {[p.argv for p in parts]}"
        literal = [p.argv for p in same if not p.dynamic]
        if len(literal) == len(same):
            assert argv in literal, f"{line!r}: bash ran {argv}, the reader read {literal}"
