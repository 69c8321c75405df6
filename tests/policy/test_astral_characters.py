"""A command line holding a character beyond U+FFFF is read without the process crashing:
tree-sitter-bash 0.25.1 can crash the whole process (SIGSEGV) on ``{`` followed by one (upstream
tree-sitter/tree-sitter-bash#337). Found by tests/contracts/test_policy.py's property test, whose
worker process died on ``'{\\U0008bc5d0_\\x0f'``. The grammar is given the line's ASCII stand-in
(adapters/policy/shell.py): every word's text is still read from the line itself, so a deny sees its
commands and a look-alike is still what it is."""

from __future__ import annotations

import subprocess
import sys

from agy_harness.adapters.policy.shell import TreeSitterParser

CRASHERS = """
from agy_harness.adapters.policy.shell import TreeSitterParser
parser = TreeSitterParser()
for n in range(3000):
    parsed = parser.parse("{" + chr(0x10000 + n * 97 % 0xF0000))
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


def test_such_a_line_is_read_from_its_own_text_and_a_deny_sees_its_commands() -> None:
    parsed = TreeSitterParser().parse("rm -rf build && echo {\U0001f389")
    assert [c.argv for c in parsed.commands] == [("rm", "-rf", "build"), ("echo", "{\U0001f389")]
