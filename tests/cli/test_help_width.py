"""Every command's ``--help`` fits the terminal (issue #39 point 3): at 80 and 60 columns no line is
wider than the terminal and no word is broken, the description, the options and the examples
included. (The texts were wrapped by hand near 100 columns: "its t / mux pane" at 80.)"""

from __future__ import annotations

import argparse

import pytest

from agy_harness.composition.entrypoints.cli import build_parser
from tests.in_process import run_cli

COMMANDS = ["", "demo", "attach", "replay", "sim", "acp", "doctor", "record", "board"]


def parsers() -> dict[str, argparse.ArgumentParser]:
    root = build_parser()
    [sub] = [a for a in root._actions if isinstance(a, argparse._SubParsersAction)]
    return {"": root, **sub.choices}


def words(parser: argparse.ArgumentParser) -> list[str]:
    """Every word the help shows from the texts the command wrote: description, epilog, option help."""
    formatter = parser._get_formatter()
    texts = [parser.description or "", parser.epilog or ""]
    texts += [
        formatter._expand_help(a)
        for a in parser._actions
        if a.help and a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
    ]
    return " ".join(texts).split()


@pytest.mark.parametrize("width", [80, 60])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c or "agy-harness")
def test_help_fits_the_terminal_and_breaks_no_word(command: str, width: int) -> None:
    # in this process (tests/in_process.py): the help is the subject, not the process (a real one
    # shows it in tests/cli/test_every_command.py and test_cli_usage.py)
    run = run_cli(*([command] if command else []), "--help", env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert run.returncode == 0, run.stderr
    too_wide = [line for line in run.stdout.splitlines() if len(line) > width]
    assert not too_wide, "\n".join(too_wide)
    shown = set(run.stdout.split())
    broken = [word for word in words(parsers()[command]) if word not in shown]
    assert not broken, broken
    assert "examples:" in run.stdout
