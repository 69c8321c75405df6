"""The ``agy-harness`` command: argument parsing, logging, and what every exit means.

Each subcommand's logic lives in its own module; this file only registers them. Exit codes (the
same for every subcommand): 0 ok, 1 failure, 2 usage or bad input, 130 interrupted (Ctrl-C). Data
(the conversation, events as JSON lines) goes to stdout; logs and errors go to stderr, one line
each, never a traceback (``-vv`` adds it to the log).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence

from . import last_resort
from .errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, explain

log = logging.getLogger("agy_harness.cli")

DESCRIPTION = """\
Drive Google's Antigravity CLI (agy) through its loopback language server: its conversation as a
clean stream of events, turns sent, gates (command approvals, questions) answered by you.
Without a real agy, `demo` and `sim` run the embedded simulator of agy."""

EPILOG = """\
examples:
  agy-harness demo                      a scripted session on the simulator; you answer the gates
  agy-harness demo --auto --pace 0      unattended and instant (what CI runs)
  agy-harness demo --profile 1.0.4      an older agy: turns are typed into its tmux pane
  agy-harness sim                       a simulator by hand (another terminal: agy-harness attach)
  agy-harness attach                    follow the running agy here; type turns, /interrupt
  agy-harness replay steps.jsonl        recorded agy steps -> events as JSON lines
  agy-harness board                     a web board of every agy session; answer gates in one click

output:
  the conversation and events go to stdout; logs (-v, -vv) and errors go to stderr.
  NO_COLOR=1 turns colour off.

exit codes:
  0 ok · 1 failure (no agy found, a turn failed, ...) · 2 usage or bad input · 130 interrupted (Ctrl-C)"""

REPLAY_DESCRIPTION = """\
Map recorded agy steps to domain events, printed as JSON lines on stdout (one event per line).
Every file is read and checked before anything is printed: bad input names the file and the
line:column where it breaks, exits 2 and prints nothing on stdout."""

REPLAY_EPILOG = """\
accepted per file: a JSON step · a list of steps · a {"steps": [...]} poll response ·
a {"update": {...}} stream update · JSON lines of stream updates or steps

examples:
  agy-harness replay steps.json
  agy-harness replay updates.jsonl | jq -r 'select(.type == "assistant_message") | .text'"""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("agy-harness")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


def _replay(args: argparse.Namespace) -> int:
    from .replay import run

    return run(args.files, sys.stdout, sys.stderr)  # EXIT_OK, or EXIT_USAGE with one line


def _sim(rest: list[str]) -> int:
    from agy_harness.adapters.simulator.cli import main as sim_main

    return int(sim_main(rest) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agy-harness",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agy-harness {version()}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging on stderr (-vv for debug)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from .demo import add_demo_commands

    add_demo_commands(sub)

    p = sub.add_parser(
        "replay",
        help="recorded agy steps -> events as JSON lines on stdout",
        description=REPLAY_DESCRIPTION,
        epilog=REPLAY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="recorded steps (see the accepted shapes below)")
    p.set_defaults(handler=_replay)

    p = sub.add_parser(
        "sim",
        help="run the agy simulator by hand (agy-harness sim --help for its options)",
        add_help=False,
    )
    p.set_defaults(handler=None)
    from .acp import add_acp_command

    add_acp_command(sub)
    from .doctor import add_doctor_command
    from .record import add_record_command

    add_doctor_command(sub)
    add_record_command(sub)
    from .board import add_board_command

    add_board_command(sub)
    return parser


def _split_global(argv: list[str]) -> tuple[int, list[str]]:
    """The ``-v`` count given before the subcommand, and the rest (so ``-v sim ...`` reaches sim)."""
    verbose = 0
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--verbose":
            verbose += 1
        elif arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) == {"v"}:
            verbose += len(arg) - 1
        else:
            break
        i += 1
    return verbose, argv[i:]


def _configure_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP: stop like Ctrl-C (everything started is cleaned up), exit 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    last_resort.arm(signum)  # if the clean stop below never completes, the process still ends
    raise Stopped(signum)


def _stop_on_signals() -> None:
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                signal.signal(sig, _stop)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose, rest = _split_global(argv)
    _stop_on_signals()
    try:
        if rest[:1] == ["sim"]:
            _configure_logging(verbose)
            return _sim(rest[1:])
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
            return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
        _configure_logging(args.verbose)
        return int(args.handler(args))
    except KeyboardInterrupt as exc:
        print("agy-harness: interrupted", file=sys.stderr)
        return 128 + exc.signum if isinstance(exc, Stopped) else EXIT_INTERRUPTED
    except Exception as exc:
        log.debug("failed", exc_info=True)
        print(f"agy-harness: {explain(exc)}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    raise SystemExit(main())
