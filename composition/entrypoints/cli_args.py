"""What every ``agy-harness`` command shares on its command line: one help style, checked values.

Every command's help has the same parts, in the same order: a one-line summary (the list of commands
shows it), a description, the options (each with its default, where it has one), then two or three
examples. The value checks turn a bad number or port into argparse's own usage error (exit 2,
``usage: ...`` and one ``error:`` line), never a failure further in. This module imports nothing
heavy: ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import argparse
from typing import Any

from .help_format import HelpFormatter

#: How a gate is answered at the terminal (``demo`` and ``attach`` show it in their help).
GATE_HELP = """\
at a gate:
  allow? [y/n]      y allows the command, n denies it
  answer (1-N ...)  an option's number (comma-separated for several), or type an answer
  /cancel, /decline refuse the gate; Ctrl-D (end of input) cancels it
  Gates wait for you as long as you need; agy itself may time a gate out (the prompt then closes).
  Ctrl-C stops (exit 130)."""

#: Placeholders, the same in every command's help.
PORT, CASCADE, PANE, FILE, SECONDS = "N", "ID", "PANE", "FILE", "SECONDS"


def command(sub: Any, name: str, *, summary: str, description: str, epilog: str) -> argparse.ArgumentParser:
    """A subcommand in the one help style (``summary`` is its line in ``agy-harness --help``)."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=HelpFormatter,
    )
    return parser


def non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


def positive(text: str) -> float:
    value = non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, not {value}")
    return value


def listen_port(text: str) -> int:
    """A port to listen on: 1-65535, or 0 for any free one."""
    return 0 if text.strip() == "0" else port(text)


def add_port(parser: Any, what: str = "agy's language-server port") -> None:
    parser.add_argument(
        "--port",
        type=port,
        metavar=PORT,
        help=f"{what}; skips discovery, still verified (default: found by discovery)",
    )


def add_cascade(parser: Any) -> None:
    parser.add_argument(
        "--cascade",
        metavar=CASCADE,
        help="the conversation (cascade) id; finds the agy that hosts it (default: agy's most recent)",
    )
