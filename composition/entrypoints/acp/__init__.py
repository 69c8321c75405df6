"""``agy-harness acp``: agy as an Agent Client Protocol agent on stdio (for Zed, JetBrains, Neovim...).

Built on the official ACP Python SDK (``agent-client-protocol``, the ``acp`` extra): its
``AgentSideConnection`` does the JSON-RPC dispatch and the schema; :mod:`.transport` owns stdio (and
answers malformed input), :mod:`.sessions` runs one harness session per ACP session, :mod:`.mapping`
turns events into ``session/update``s and :mod:`.gates` puts agy's gates to the client.

Only :func:`add_acp_command` is imported by the CLI; the SDK is imported when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from typing import Any

log = logging.getLogger("agy_harness.acp")


async def serve(args: argparse.Namespace, protocol_fd: int) -> int:
    from acp import run_agent

    from .agent import AgyAcpAgent
    from .binding import AgyTarget
    from .launcher import AgyLauncher
    from .transport import StdioTransport

    transport = await StdioTransport(0, protocol_fd).start()
    target = AgyTarget(port=args.port, tmux_target=args.tmux)
    if args.tmux:
        target.pane_pid = await asyncio.to_thread(_pane_pid, args.tmux)
    sim: dict[str, Any] | None = None
    if args.sim:
        sim = {"profile": args.sim_profile, "pace": args.sim_pace, "gate_timeout": args.sim_gate_timeout}
    # (a real agy's version is asked of the agy each session binds: composition.container.bind_endpoint)
    launcher = None
    if args.start_agy and not args.sim and args.port is None and not args.tmux:
        launcher = AgyLauncher(args.agy_command, args.agy_session)
    agent = AgyAcpAgent(transport, sim=sim, target=target, launcher=launcher)
    transport.on_cancel_prompt = agent.cancel  # ``$/cancel_request`` for a running prompt
    # Ctrl-C: 130 at every moment. asyncio.run's own Ctrl-C cancels this task, and once a message was
    # served the SDK's loop ended quietly on that cancel (exit 0); the signal is kept here instead.
    interrupted: list[int] = []
    me, loop = asyncio.current_task(), asyncio.get_running_loop()

    def on_interrupt() -> None:
        interrupted.append(signal.SIGINT)
        if me is not None:
            me.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        # the agent implements the methods it announces; the SDK answers the others -32601.
        # session/resume and session/close are stable ACP v1 methods that this SDK still routes only
        # with its "unstable protocol" switch on.
        await run_agent(agent, transport, use_unstable_protocol=True)  # type: ignore[arg-type]
    except asyncio.CancelledError:
        if not interrupted:
            raise
    finally:
        await agent.close()
    if interrupted:
        print("agy-harness: interrupted", file=sys.stderr)
        return 130
    return 0


def _pane_pid(pane: str) -> int | None:
    """The process of agy's tmux pane (discovery then looks at that pane's processes only)."""
    from ...root.container import pane_process

    try:
        return int(pane_process(pane))
    except Exception as exc:
        log.warning("tmux pane %s: its process is unknown (%s); discovery is not narrowed to it", pane, exc)
        return None


def _acp(args: argparse.Namespace) -> int:
    try:
        import acp  # noqa: F401
    except ImportError:
        print(f"agy-harness acp: the ACP SDK is missing; {INSTALL}", file=sys.stderr)
        return 2
    if sys.stdin.isatty():  # a person typed it: say what it is for, then serve all the same
        print(TERMINAL_HINT, file=sys.stderr)
    from .transport import claim_stdout

    protocol_fd = claim_stdout()  # from here on, only protocol messages reach the real stdout
    return asyncio.run(serve(args, protocol_fd))  # Ctrl-C: 130, from cli.main


INSTALL = "in your agy-harness clone: pip install -e '.[acp]'"
TERMINAL_HINT = "agy-harness acp speaks the Agent Client Protocol on stdio; start it from an editor"

DESCRIPTION = """\
Serve agy as an Agent Client Protocol agent on stdin/stdout, for editors (Zed, JetBrains, Neovim):
each ACP session is an agy conversation, with live tool cards, permission requests, questions,
reasoning and cancel. stdout carries protocol messages only; logs go to stderr (-v, -vv).
Needs the ACP SDK: in your agy-harness clone, pip install -e '.[acp]'."""

EPILOG = """\
examples:
  agy-harness acp                    the agy running here (discovery)
  agy-harness acp --sim              the embedded simulator, to try it without agy
  agy-harness acp --port 41234       that agy, when several run
  agy-harness acp --start-agy        starts agy in tmux (tmux attach -t agy) when none runs
  (in Zed: "agent_servers": {"agy": {"type": "custom", "command": "/abs/path/to/agy-harness",
   "args": ["acp"]}}; `which agy-harness` prints the path)"""


def add_acp_command(sub: Any) -> None:
    from ..cli_args import PANE, add_port, command, non_negative

    p = command(
        sub,
        "acp",
        summary="run as an Agent Client Protocol agent on stdio (register it in Zed, JetBrains, ...)",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    where = p.add_mutually_exclusive_group()
    add_port(where)
    where.add_argument(
        "--sim", action="store_true", help="use the embedded agy simulator (default: a real agy)"
    )
    p.add_argument(
        "--tmux",
        metavar=PANE,
        help="agy's tmux pane (e.g. %%3): agy is looked for in that pane only, and turns are typed "
        "there where RPC cannot take them (default: no pane)",
    )
    p.add_argument(
        "--start-agy",
        action="store_true",
        help="when no agy of yours runs, start one in a tmux session you can attach to, in the "
        "session's directory (default: off)",
    )
    p.add_argument(
        "--agy-command",
        default="agy",
        metavar="CMD",
        help="with --start-agy, the command that starts agy (default: agy)",
    )
    p.add_argument(
        "--agy-session",
        default="agy",
        metavar="NAME",
        help="with --start-agy, the tmux session it runs in (default: agy; tmux attach -t agy)",
    )
    p.add_argument("--sim-profile", default="1.0.10", help=argparse.SUPPRESS)
    p.add_argument(
        "--sim-pace",
        type=non_negative,
        default=1.0,
        metavar="SCALE",
        help="with --sim, the model's speed: 1 = like a person reads (default), 0 = instant",
    )
    p.add_argument("--sim-gate-timeout", type=float, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_acp)
