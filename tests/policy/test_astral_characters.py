"""A command line holding a character beyond U+FFFF never reaches the shell grammar: tree-sitter-bash
0.25.1 can crash the whole process (SIGSEGV) on ``{`` followed by one (upstream
tree-sitter/tree-sitter-bash#337). Found by tests/contracts/test_policy.py's property test, whose
worker process died on ``'{\\U0008bc5d0_\\x0f'``. Such a line is not understood (the rules ask) and its
commands are still listed (a deny still sees them)."""

from __future__ import annotations

import subprocess
import sys

from agy_harness.adapters.policy.shell import TreeSitterParser

CRASHERS = """
from agy_harness.adapters.policy.shell import TreeSitterParser
parser = TreeSitterParser()
for n in range(3000):
    parsed = parser.parse("{" + chr(0x10000 + n * 97 % 0xF0000))
    assert not parsed.understood, parsed
print("read them all")
"""


def test_lines_that_crashed_the_grammar_are_read_in_every_process() -> None:
    # before: 1 process in 4 died of SIGSEGV (exit -11); eight of them: all lived in ~1 run in 10
    runs = [
        subprocess.Popen([sys.executable, "-c", CRASHERS], stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    for run in runs:
        out, _ = run.communicate(timeout=300)
        assert run.returncode == 0 and "read them all" in out, run.returncode


def test_such_a_line_is_asked_and_a_deny_still_sees_its_commands() -> None:
    parsed = TreeSitterParser().parse("rm -rf build && echo {\U0001f389")
    assert not parsed.understood
    assert parsed.reason == "it holds characters beyond U+FFFF, which the shell grammar cannot read safely"
    assert [c.argv[0] for c in parsed.commands] == ["rm", "echo"]
