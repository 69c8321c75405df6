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
import logging
import sys
from typing import Any

log = logging.getLogger("agy_harness.acp")


async def serve(args: argparse.Namespace, protocol_fd: int) -> int:
    from acp import run_agent

    from ..version_gate import agy_version
    from .agent import AgyAcpAgent
    from .sessions import AgyTarget
    from .transport import StdioTransport

    transport = await StdioTransport(0, protocol_fd).start()
    target = AgyTarget(port=args.port, tmux_target=args.tmux)
    sim: dict[str, Any] | None = None
    if args.sim:
        sim = {"profile": args.sim_profile, "pace": args.sim_pace, "gate_timeout": args.sim_gate_timeout}
    else:
        target.version_text = await agy_version()
    agent = AgyAcpAgent(transport, sim=sim, target=target)
    try:
        # the agent implements the methods it announces; the SDK answers the others -32601
        await run_agent(agent, transport)  # type: ignore[arg-type]
    finally:
        await agent.close()
    return 0


def _acp(args: argparse.Namespace) -> int:
    try:
        import acp  # noqa: F401
    except ImportError:
        print("agy-harness acp: the ACP SDK is missing; pip install 'agy-harness[acp]'", file=sys.stderr)
        return 2
    from .transport import claim_stdout

    protocol_fd = claim_stdout()  # from here on, only protocol messages reach the real stdout
    try:
        return asyncio.run(serve(args, protocol_fd))
    except KeyboardInterrupt:
        return 0


def add_acp_command(sub: Any) -> None:
    p = sub.add_parser(
        "acp",
        help="run as an Agent Client Protocol agent on stdio (register it in Zed, JetBrains, ...)",
        description="An ACP agent on stdin/stdout: each ACP session is an agy conversation. "
        "Logs go to stderr; stdout carries only protocol messages.",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--port", type=int, help="agy's language-server port (skips discovery, still verified)"
    )
    where.add_argument("--sim", action="store_true", help="use the embedded agy simulator (to try it out)")
    p.add_argument("--tmux", help="agy's tmux pane, for turn-send where RPC cannot serve")
    p.add_argument("--sim-profile", default="1.0.10", help=argparse.SUPPRESS)
    p.add_argument("--sim-pace", type=float, default=1.0, help="simulator pacing (1 = human, 0 = instant)")
    p.add_argument("--sim-gate-timeout", type=float, default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=_acp)
