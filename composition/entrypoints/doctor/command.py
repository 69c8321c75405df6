"""``agy-harness doctor``'s command line; the probe itself (:mod:`.probe`) is imported when it runs."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from ..cli_args import add_cascade, add_port, command

DESCRIPTION = """\
Probe a live agy, read-only: its version, which RPC methods this project uses are present or
missing, and every field, step type and enum value it saw that this project does not know (a drift
report to paste into an issue when agy changes). Methods that could change something are probed
with an empty request that names no conversation; the stream is opened for one frame and closed;
StartCascade is not probed."""

EPILOG = """\
examples:
  agy-harness doctor                     the agy running here (its most recent conversation)
  agy-harness doctor --cascade ID        the agy hosting that conversation, its steps checked
  agy-harness doctor --port 41234 --json  the report as JSON"""


def run_doctor(args: argparse.Namespace) -> int:
    from .probe import run

    return asyncio.run(run(args))  # a failure is one explained line from cli.main (exit 1)


def add_doctor_command(sub: Any) -> None:
    p = command(
        sub,
        "doctor",
        summary="probe a live agy read-only: version, methods, and the fields this project does not know",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    where = p.add_mutually_exclusive_group()
    add_port(where)
    add_cascade(where)
    p.add_argument("--json", action="store_true", help="the report as JSON (default: text)")
    p.add_argument("--agy-version", default=None, help=argparse.SUPPRESS)  # tests: skip `agy --version`
    p.set_defaults(handler=run_doctor)
