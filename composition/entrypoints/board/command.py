"""The ``board`` command: start the board's web server on loopback and print the URL to open."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from ..cli_args import listen_port, non_negative, port
from ..errors import EXIT_USAGE, BadInput
from ..help_format import HelpFormatter
from .notify import ENV, Notifier, NotifySetupError, check_urls, link_for, urls_from
from .open_links import OpenLinks

DESCRIPTION = """\
A local web board of every agy session on this machine: by state (needs you, working, failed,
idle), each one live (reply, reasoning, tool cards, diffs), every question and command approval
as a card you answer in one click, turns and interrupts. It listens on 127.0.0.1 only and prints
a URL with a secret token; every request must carry it. Nothing leaves the machine unless you
name notification URLs (Apprise's: ntfy, Slack, Matrix, Telegram, Pushover, mailto, a desktop...)
in a 0600 file (--notify-urls-file) or in $AGY_HARNESS_NOTIFY_URLS; never on the command line.
A notification says "agy needs you in <project>" and links to the board (without its token);
what agy asks goes out only with --notify-content."""

EPILOG = """\
examples:
  agy-harness board                        every agy of yours on this machine
  agy-harness board --sim                  try it on the embedded simulator
  agy-harness board --notify-urls-file ~/.config/agy-board.urls --notify gate,failed

exit codes:
  0 ok · 1 failure · 2 usage or bad input · 130 interrupted (Ctrl-C)"""

#: the embedded simulator's show: three conversations, two of which wait for you
SHOWCASE = (
    "run: git status",
    "ask: which part should we work on first?",
    "Say hello in one short sentence.",
)


def add_board_command(sub: Any) -> None:
    p = sub.add_parser(
        "board",
        help="a local web board of every agy session: states, live view, one-click answers",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "--host", default="127.0.0.1", metavar="H", help="address to listen on (default: %(default)s)"
    )
    p.add_argument(
        "--port", type=listen_port, default=0, metavar="N", help="port to listen on (default: any free port)"
    )
    p.add_argument(
        "--agy-port", type=port, action="append", default=[], metavar="N",
        help="agy's language-server port (repeatable; default: find every agy of yours)",
    )  # fmt: skip
    p.add_argument("--sim", action="store_true", help="embed the agy simulator with three conversations")
    p.add_argument(
        "--sim-pace", type=non_negative, default=1.0, metavar="SCALE",
        help="with --sim, the model's speed: 1 = like a person reads (default), 0 = instant",
    )  # fmt: skip
    p.add_argument(
        "--notify-urls-file", default=None, metavar="PATH",
        help="Apprise URLs to notify, one a line, in a file only you may read (chmod 600); "
        f"also ${ENV} (default: no notifications)",
    )  # fmt: skip
    p.add_argument(
        "--notify", type=_kinds, default=None, metavar="KINDS",
        help=f"what is notified: gate, turn, failed (default: {DEFAULT_KINDS}; needs notification URLs)",
    )  # fmt: skip
    p.add_argument(
        "--notify-content", action="store_true",
        help="include what agy asks (the command line, the question) and why a turn failed; "
        "off by default: a notification names only the project",
    )  # fmt: skip
    p.add_argument("--webhook", default=None, help=argparse.SUPPRESS)  # gone: refused with where URLs go now
    p.set_defaults(handler=run_board)


DEFAULT_KINDS = "gate,turn,failed"


def _kinds(text: str) -> str:
    """``--notify``'s kinds, each one of gate, turn, failed (else argparse's usage error, exit 2)."""
    known = ("gate", "turn", "failed")  # notify.KINDS (not imported: --help stays light)
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in known]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"unknown kind(s) {', '.join(unknown) or repr(text)}; choose from {', '.join(known)} (comma-separated)"
        )
    return ",".join(kinds)


def run_board(args: argparse.Namespace) -> int:
    try:
        import starlette  # noqa: F401
    except ImportError:
        print(
            "agy-harness board: the web stack is missing; pip install 'agy-harness[board]'", file=sys.stderr
        )
        return EXIT_USAGE
    try:
        notifier = notifier_from(args, os.environ)
    except NotifySetupError as exc:
        print(f"agy-harness board: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return asyncio.run(_serve(args, notifier))


def notifier_from(args: argparse.Namespace, environ: Mapping[str, str]) -> Notifier | None:
    """The notifier the arguments and the environment ask for (None: none); NotifySetupError says
    what is wrong and what to do."""
    if args.webhook is not None:
        raise NotifySetupError(
            "--webhook is gone: a URL on the command line is read by any local user (/proc). Put "
            f"notification URLs (Apprise's; an ntfy topic is ntfys://ntfy.sh/TOPIC) in a file only you "
            f"may read, given with --notify-urls-file PATH (chmod 600), or in ${ENV}"
        )
    urls = urls_from(args.notify_urls_file, environ)
    if not urls:
        if args.notify is not None or args.notify_content:  # a choice with nowhere to go: refused
            raise NotifySetupError(
                "--notify and --notify-content say what notifications carry, but there is nowhere to send "
                f"them: give URLs with --notify-urls-file PATH (chmod 600) or ${ENV}, or leave them out"
            )
        return None
    check_urls(urls)
    kinds = tuple(k for k in (args.notify or DEFAULT_KINDS).split(",") if k)
    return Notifier(urls, kinds, content=args.notify_content)


@dataclass
class Running:
    url: str
    token: str
    port: int
    board: Any


def _listen(host: str, port: int) -> socket.socket:
    """The board's listening socket; a port in use or a host that is not this machine's is bad input
    (one line naming it and what to do, exit 2), never the OSError's own words."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BadInput(
                f"--port {port}: another program listens there; name another port, or leave out --port "
                "(a free one is picked)"
            ) from None
        why = exc.strerror or str(exc)
        raise BadInput(
            f"--host {host}: not an address this machine listens on ({why.lower()}); leave out --host "
            "(127.0.0.1: this machine only)"
        ) from None
    sock.setblocking(False)
    return sock


def _hosts(host: str, port: int) -> set[str]:
    names = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    names.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return names


@contextlib.asynccontextmanager
async def running_board(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    agy_ports: list[int] | None = None,
    pids: list[int] | None = None,
    notifier: Notifier | None = None,
    tick: float = 0.5,
    token: str | None = None,
) -> AsyncIterator[Running]:
    """The board served on ``host:port`` until the block ends (tests and benchmarks use it too)."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    from .app import build_app
    from .fleet import Fleet
    from .hub import Board

    token = token or secrets.token_urlsafe(24)
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    board = Board(Fleet(ports=agy_ports or (), pids=pids), notifier=notifier, tick=tick)
    await board.start()
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("agy_harness.board.http")  # hypercorn's lines go to our log
    config.graceful_timeout = 1.0
    stop = asyncio.Event()
    opens = OpenLinks()
    server = asyncio.create_task(
        serve(build_app(board, token, _hosts(host, bound), opens), config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
    )
    shown = f"[{host}]" if ":" in host else host
    if notifier is not None:
        notifier.link = link_for(f"http://{shown}:{bound}/")
        notifier.opens = opens
    try:
        yield Running(f"http://{shown}:{bound}/?token={token}", token, bound, board)
    finally:
        await board.stop()
        stop.set()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await server
        server.cancel()
        with contextlib.suppress(OSError):  # hypercorn closed the fd it was given
            sock.close()


async def _serve(args: argparse.Namespace, notifier: Notifier | None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    stop = asyncio.Event()
    stopped_by: list[int] = []
    loop = asyncio.get_running_loop()

    def stop_on(sig: int) -> None:
        stopped_by.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop_on, sig)
    async with contextlib.AsyncExitStack() as stack:
        agy_ports = list(args.agy_port)
        if args.sim:
            from agy_harness.adapters.simulator import Simulator

            sim = await stack.enter_async_context(Simulator(pace=args.sim_pace))
            await _showcase(sim)
            agy_ports.append(sim.port)
        board = await stack.enter_async_context(
            running_board(host=args.host, port=args.port, agy_ports=agy_ports, notifier=notifier)
        )
        if not _loopback(args.host):
            print(
                f"agy-harness board: WARNING: listening on {args.host}, beyond this machine", file=sys.stderr
            )
        print(f"agy board: open {board.url}", file=out, flush=True)
        print("(Ctrl-C stops it)", file=out, flush=True)
        await stop.wait()
    if stopped_by:  # (on a line of its own: the terminal echoed ^C)
        print("\nagy board stopped", file=sys.stderr)
    return 128 + stopped_by[0] if stopped_by else 0  # the CLI's codes: 130 for Ctrl-C, 143 for SIGTERM


async def _showcase(sim: Any) -> None:
    ids = [sim.cascade_id, await sim.start_cascade(), await sim.start_cascade()]
    for cascade_id, text in zip(ids, SHOWCASE, strict=True):
        await sim.submit_user_turn(text, cascade_id=cascade_id)


def _loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host).is_loopback
    return host == "localhost"


__all__ = ["add_board_command", "run_board", "running_board"]
