"""``agy-harness attach``: follow a running agy in this terminal, type turns, answer its gates.

One reader of the keyboard (:class:`~agy_harness.adapters.sinks.keyboard.Keyboard`) serves both the
turn prompt and the gates: while a gate waits, the next line answers it and never becomes a turn.
Ctrl-D at the prompt detaches (exit 0); Ctrl-C detaches at any time (exit 130, from the CLI).
When more than one agy answers, a terminal is asked which one (:mod:`.picker`); elsewhere it refuses.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from .cli_args import GATE_HELP, PANE, add_cascade, add_port, command
from .errors import NO_TMUX_TURNS, BadInput, explain

log = logging.getLogger("agy_harness.attach")

HELP = "type a turn and Enter · /interrupt stops agy · /help · Ctrl-D detaches"


async def run_attach(
    *,
    cascade_id: str | None,
    port: int | None,
    tmux_target: str | None,
    keyboard: object = None,
    verbose: int = 0,
) -> int:
    """Attach in this terminal. Log records reach the screen only with ``verbose`` (``-v``): agy going
    away and coming back is one status line each (``session_from``'s ``presence``), not a log flood."""
    from agy_harness.adapters.sinks.keyboard import Keyboard
    from agy_harness.adapters.sinks.terminal import TerminalSink
    from agy_harness.adapters.sinks.terminal_screen import logs_through

    pane_pid = _pane(tmux_target) if tmux_target is not None else None  # before the screen is taken
    if port is not None:
        pane_pid = None  # the port names agy; the pane only takes the turns
    kb = keyboard if isinstance(keyboard, Keyboard) else Keyboard()
    terminal = TerminalSink(keyboard=kb)
    with logs_through(terminal.screen, logging.NOTSET if verbose else logging.CRITICAL + 1):
        try:
            return await _attached(
                terminal, port=port, cascade_id=cascade_id, tmux_target=tmux_target, pane_pid=pane_pid
            )
        finally:
            terminal.close()


async def _attached(
    terminal: Any, *, port: int | None, cascade_id: str | None, tmux_target: str | None, pane_pid: int | None
) -> int:
    from agy_harness.ports.errors import AgyAmbiguous

    from ..root.container import bind_endpoint, make_container
    from ..root.session import session_from

    container = make_container(
        port=port, cascade_id=cascade_id, pane_pid=pane_pid, sink=terminal, tmux_target=tmux_target
    )  # agy's version: asked of the agy that discovery binds
    try:
        discovered = await bind_endpoint(container)
    except AgyAmbiguous as exc:  # which is which: picked on a terminal, else refused with the list
        from .picker import pick_port

        port = await pick_port(exc, "attach")  # then as `attach --port N`
        container = make_container(port=port, cascade_id=cascade_id, sink=terminal, tmux_target=tmux_target)
        discovered = await bind_endpoint(container)
    async with session_from(container, discovered=discovered, presence=terminal.info) as session:
        terminal.info(f"attached · {session.capabilities.describe()}")
        can_send = session.capabilities.rpc_turns or tmux_target is not None
        if not can_send:
            terminal.info(NO_TMUX_TURNS)
        terminal.info(HELP)
        while True:
            line = await terminal.read_turn()
            if line is None:
                terminal.info("detached")
                return 0
            text = line.strip()
            if not text:
                continue
            if text == "/help":
                terminal.info(HELP)
            elif text == "/interrupt":
                report = await session.interrupt()
                if not report.cancelled:  # a cancel is reported once, by the harness's notice
                    terminal.info(report.detail or "nothing to interrupt")
            elif text.startswith("/") and " " not in text:
                terminal.info(f"unknown command {text}; {HELP}")
            elif not can_send:
                terminal.info(NO_TMUX_TURNS)
            else:
                try:
                    await session.send(line)
                except Exception as exc:  # the turn failed; the session goes on
                    log.debug("send failed", exc_info=True)
                    terminal.info(f"the turn was not sent: {explain(exc)}")


def _pane(target: str) -> int:
    """The process of tmux pane ``target``; a missing tmux or pane is bad input (exit 2), said once."""
    import shutil

    from ..root.container import pane_process

    if shutil.which("tmux") is None:
        raise BadInput(f"--tmux {target}: tmux is not installed here; install tmux, or leave out --tmux")
    try:
        return pane_process(target)
    except Exception as exc:
        log.debug("pane %s", target, exc_info=True)
        raise BadInput(
            f"--tmux {target}: no such tmux pane ({explain(exc).split(' (')[0]}); in agy's pane, "
            "`tmux display -p '#{pane_id}'` prints its id"
        ) from exc


def _attach(args: argparse.Namespace) -> int:
    return asyncio.run(
        run_attach(cascade_id=args.cascade, port=args.port, tmux_target=args.tmux, verbose=args.verbose)
    )


ATTACH_DESCRIPTION = """\
Follow a running agy in this terminal: its conversation rendered live, your lines sent as turns,
its gates put to you. agy's port is found by itself (agy processes -> loopback ports -> the one
that knows the conversation); `agy-harness sim` in another terminal is found the same way. When
more than one agy answers, a terminal is asked which one (elsewhere: pass --port)."""

ATTACH_EPILOG = f"""\
at the ❯ prompt:
  text + Enter      a new turn
  /interrupt        stop agy's current work
  Ctrl-D            detach (exit 0); Ctrl-C detaches too (exit 130)

{GATE_HELP}

examples:
  agy-harness attach                          the only agy running
  agy-harness attach --cascade 2399249c-...   that conversation, wherever it runs
  agy-harness attach --port 41234             skip the scan (the port is still verified)
  agy-harness attach --tmux %3                an agy before 1.0.10: type turns into its tmux pane"""


def add_attach_command(sub: Any) -> None:
    p = command(
        sub,
        "attach",
        summary="follow a running agy in this terminal (type turns, /interrupt, answer gates)",
        description=ATTACH_DESCRIPTION,
        epilog=ATTACH_EPILOG,
    )
    add_cascade(p)
    add_port(p)
    p.add_argument(
        "--tmux",
        metavar=PANE,
        help="agy's tmux pane (e.g. %%3): agy is looked for in that pane only, and turns are typed "
        "there where RPC cannot take them (default: no pane)",
    )
    p.set_defaults(handler=_attach)
