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
from .cli_args import command, non_negative, positive
from .errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, BadInput, explain
from .help_format import HelpFormatter

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
  agy-harness COMMAND --help            each command's options, defaults and examples

output:
  the conversation and events go to stdout; logs (-v, -vv) and errors go to stderr.
  NO_COLOR=1 turns colour off.

exit codes:
  0 ok · 1 failure (no agy found, a turn failed, ...) · 2 usage or bad input · 130 interrupted (Ctrl-C; 143/129 for SIGTERM/SIGHUP)"""

REPLAY_DESCRIPTION = """\
Map recorded agy steps to domain events, printed as JSON lines on stdout (one event per line).
Every input is read and checked before anything is printed: bad input names the file and the
line:column where it breaks, exits 2 and prints nothing on stdout. `-` reads standard input."""

REPLAY_EPILOG = """\
accepted per file: a JSON step · a list of steps · a {"steps": [...]} poll response ·
a {"update": {...}} stream update · JSON lines of stream updates or steps (what `record` writes)

examples:
  agy-harness replay steps.json
  agy-harness replay session.jsonl | jq -r 'select(.type == "assistant_message") | .text'
  agy-harness record --seconds 30 --out - | agy-harness replay -    a live conversation's events"""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("agy-harness")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked (it costs a metadata scan)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        print(f"agy-harness {version()}")  # on stdout, as argparse's own version action does
        parser.exit()


def _replay(args: argparse.Namespace) -> int:
    from .replay import run

    return run(args.files, sys.stdout, sys.stderr)  # EXIT_OK, or EXIT_USAGE with one line


def _sim(args: argparse.Namespace) -> int:
    from agy_harness.adapters.simulator.cli import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agy-harness",
        description=DESCRIPTION,
        epilog=EPILOG,
    )  # (HelpFormatter once the subcommands are added: add_subparsers formats a usage, and rich
    # would be imported for --version and every command)
    parser.add_argument("--version", action=_Version)
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging on stderr (-vv for debug)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.formatter_class = HelpFormatter

    from .attach import add_attach_command
    from .demo import add_demo_command

    add_demo_command(sub)
    add_attach_command(sub)

    p = command(
        sub, "replay", summary="recorded agy steps -> events as JSON lines on stdout",
        description=REPLAY_DESCRIPTION, epilog=REPLAY_EPILOG,
    )  # fmt: skip
    p.add_argument("files", nargs="+", metavar="FILE", help="recorded steps (the shapes below); - is stdin")
    p.set_defaults(handler=_replay)

    from agy_harness.adapters.simulator import cli as sim_cli

    p = command(sub, "sim", summary=sim_cli.SUMMARY, description=sim_cli.DESCRIPTION, epilog=sim_cli.EPILOG)
    sim_cli.add_arguments(p, number=non_negative, positive=positive)
    p.set_defaults(handler=_sim)
    from .acp import add_acp_command

    add_acp_command(sub)
    from .doctor.command import add_doctor_command
    from .record import add_record_command

    add_doctor_command(sub)
    add_record_command(sub)
    from .board import add_board_command

    add_board_command(sub)
    from .audit import add_audit_command

    add_audit_command(sub)
    from .policy_command import add_policy_command

    add_policy_command(sub)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; a usage error is the failing command's own (``replay --bogus`` shows replay's
    usage), and no command at all shows the help (on stderr, exit 2: there is nothing to do)."""
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "command", None) is None:
        parser.print_help(sys.stderr)
        raise SystemExit(EXIT_USAGE)
    if extra:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


class _Said(logging.Formatter):
    """A warning at the default verbosity, as the CLI says things: ``agy-harness: warning: ...`` on one
    line (no timestamp, logger name or traceback: ``-v`` shows those)."""

    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        return f"agy-harness: {record.levelname.lower()}: {text}"


def _configure_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s") if verbose else _Said()
    )
    logging.basicConfig(level=level, handlers=[handler])


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
    _stop_on_signals()
    args: argparse.Namespace | None = None
    try:
        try:
            args = parse(build_parser(), argv)
        except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
            return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
        _configure_logging(args.verbose)
        return int(args.handler(args))
    except KeyboardInterrupt as exc:
        print("agy-harness: interrupted", file=sys.stderr)
        return 128 + exc.signum if isinstance(exc, Stopped) else EXIT_INTERRUPTED
    except BadInput as exc:
        log.debug("bad input", exc_info=True)
        name = f"agy-harness {args.command}" if args is not None else "agy-harness"
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        log.debug("failed", exc_info=True)
        print(f"agy-harness: {explain(exc)}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    raise SystemExit(main())
