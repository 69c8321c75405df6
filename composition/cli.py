"""The ``agy-harness`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence


def _replay(args: argparse.Namespace) -> int:
    from .replay import ReplayInputError, replay, write_events

    try:
        events = replay(args.files)
    except ReplayInputError as exc:
        print(f"agy-harness replay: {exc}", file=sys.stderr)
        return 2
    write_events(events, sys.stdout)
    return 0


def _sim(args: argparse.Namespace, rest: list[str]) -> int:
    from agy_harness.adapters.simulator.cli import main as sim_main

    return int(sim_main(rest) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agy-harness", description=__doc__)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("replay", help="map recorded agy steps to events (JSON lines on stdout)")
    p.add_argument("files", nargs="+", help="JSON step / list / {steps} / JSONL stream updates")
    p.set_defaults(handler=_replay)

    p = sub.add_parser("sim", help="run the agy simulator by hand", add_help=False)
    p.set_defaults(handler=None)

    from .demo import add_demo_commands

    add_demo_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sim"]:
        return _sim(argparse.Namespace(), argv[1:])
    args = build_parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
