"""``agy-harness demo`` (the simulator, end to end) and ``agy-harness attach`` (a real agy).

The demo starts the embedded agy simulator and drives one scripted session through the public API:
a text turn, a gated command approved, a gated command denied, a question, and an interrupt while the
model is still writing. Everything is rendered live by the terminal sink; gates are put to you at the
keyboard, or answered by a visible policy with ``--auto`` (what CI runs).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import EventSink, GateAnswer

log = logging.getLogger("agy_harness.demo")

#: The scripted session: (what the user types, what the demo does while it runs).
SCRIPT: list[tuple[str, str]] = [
    ("Say hello in one short sentence.", "wait"),
    ("run: git status", "wait"),
    ("run: rm -rf build", "wait"),
    ("ask: which part should we work on first?", "wait"),
    ("Write a long story about a lighthouse keeper.", "interrupt"),
]


def auto_policy(gate: GateOpened) -> GateAnswer:
    """``--auto``: approve commands unless they delete things; pick the first option of a question."""
    if gate.kind == "permission":
        command = gate.permission.command_line or gate.permission.target if gate.permission else ""
        return GateAnswer(allow="rm " not in f"{command} ")
    return GateAnswer(selections=tuple((q.options[0].id,) if q.options else ("ok",) for q in gate.questions))


class TapSink:
    """Passes everything to ``inner`` and lets the demo wait for what it needs to see."""

    def __init__(self, inner: EventSink) -> None:
        self.inner = inner
        self.seen: list[Event] = []
        self._changed = asyncio.Event()

    async def deliver(self, events: Sequence[Event]) -> int:
        n = await self.inner.deliver(events)
        self.seen.extend(events[:n])
        self._changed.set()
        return n

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return await self.inner.ask(gate)

    async def withdraw(self, gate_id: str) -> None:
        await self.inner.withdraw(gate_id)

    async def wait_for(self, predicate: Callable[[Event], bool], start: int, timeout: float) -> Event:
        async with asyncio.timeout(timeout):
            while True:
                for event in self.seen[start:]:
                    if predicate(event):
                        return event
                self._changed.clear()
                await self._changed.wait()


def _turn_over(e: Event) -> bool:
    return e.type == "status" and e.status in ("idle", "failed")  # type: ignore[union-attr]


async def run_demo(
    *, auto: bool, profile: str, pace: float, console: Any = None, timeout: float = 60.0
) -> int:
    from agy_harness.adapters.simulator import Simulator
    from agy_harness.adapters.sinks.terminal import TerminalSink

    from .container import make_container
    from .session import session_from

    terminal = TerminalSink(console=console, auto_answer=auto_policy if auto else None)
    tap = TapSink(terminal)
    async with Simulator(profile=profile, pace=pace) as sim:
        terminal.info(
            f"agy simulator {sim.version} on https://127.0.0.1:{sim.port} · cascade {sim.cascade_id}"
        )
        container = make_container(
            port=sim.port, cascade_id=sim.cascade_id, sink=tap, version_text=sim.version
        )
        async with session_from(container) as session:
            terminal.info(session.capabilities.describe())
            for text, action in SCRIPT:
                start = len(tap.seen)
                served = await session.send(text)
                log.info("turn sent by %s", served)
                if action == "interrupt":
                    await tap.wait_for(lambda e: e.type == "text_delta", start, timeout)
                    await session.interrupt()  # the harness reports what it did as a notice
                    await tap.wait_for(lambda e: e.type == "user_message", start, timeout)
                await tap.wait_for(_turn_over, start, timeout)
                await asyncio.sleep(0.05)
            usage = [e for e in tap.seen if e.type == "usage"]
            terminal.info(
                f"demo done: {len(tap.seen)} events, "
                f"{usage[-1].cumulative_input_tokens if usage else 0} input tokens"
            )  # type: ignore[union-attr]
    return 0


async def run_attach(*, cascade_id: str | None, port: int | None, tmux_target: str | None) -> int:
    from agy_harness.adapters.sinks.terminal import TerminalSink

    from .container import make_container
    from .session import session_from
    from .version_gate import agy_version

    terminal = TerminalSink()
    container = make_container(
        port=port,
        cascade_id=cascade_id,
        sink=terminal,
        tmux_target=tmux_target,
        version_text=await agy_version(),
    )
    async with session_from(container) as session:
        terminal.info(f"attached to cascade {session.cascade_id} · {session.capabilities.describe()}")
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return 0
            text = line.rstrip("\n")
            if text == "/interrupt":
                terminal.info((await session.interrupt()).detail)
            elif text:
                await session.send(text)


def _demo(args: argparse.Namespace) -> int:
    return asyncio.run(run_demo(auto=args.auto, profile=args.profile, pace=args.pace))


def _attach(args: argparse.Namespace) -> int:
    return asyncio.run(run_attach(cascade_id=args.cascade, port=args.port, tmux_target=args.tmux))


DEMO_DESCRIPTION = """\
A scripted session on the embedded agy simulator, rendered live: a text turn, a command you approve,
one you deny, a question, and an interrupt while agy is still writing. Gates are put to you at the
keyboard; --auto answers them by a visible policy instead (what CI runs)."""

GATE_HELP = """\
at a gate:
  allow? [y/n]      y allows the command, n denies it
  answer (1-N ...)  an option's number (comma-separated for several), or type an answer
  /cancel, /decline refuse the gate; Ctrl-D (end of input) cancels it
  Gates wait for you as long as you need; agy itself may time a gate out (the prompt then closes).
  Ctrl-C stops (exit 130)."""

DEMO_EPILOG = f"""\
{GATE_HELP}

examples:
  agy-harness demo                    you answer the gates
  agy-harness demo --auto --pace 0    unattended and instant
  agy-harness demo --profile 1.0.4    an agy without RPC turn-send: the demo runs it in a tmux pane
                                      of its own and types the turns there (needs tmux)"""

ATTACH_DESCRIPTION = """\
Follow a running agy in this terminal: its conversation rendered live, your lines sent as turns,
its gates put to you. agy's port is found by itself (agy processes -> loopback ports -> the one
that knows the conversation); `agy-harness sim` in another terminal is found the same way."""

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


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, not {value}")
    return value


def add_demo_commands(sub: Any) -> None:
    from agy_harness.adapters.simulator.profiles import DEFAULT_PROFILE, PROFILES

    p = sub.add_parser(
        "demo",
        help="a scripted session on the embedded agy simulator (you answer the gates)",
        description=DEMO_DESCRIPTION,
        epilog=DEMO_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--auto", action="store_true", help="answer gates by a visible policy (for CI)")
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=sorted(PROFILES),
        help="the agy version the simulator plays (default %(default)s)",
    )
    p.add_argument(
        "--pace",
        type=_non_negative,
        default=1.0,
        metavar="SCALE",
        help="the model's speed: 1 = like a person reads (default), 0 = instant",
    )
    p.set_defaults(handler=_demo)
    p = sub.add_parser(
        "attach",
        help="follow a running agy in this terminal (type turns, /interrupt, answer gates)",
        description=ATTACH_DESCRIPTION,
        epilog=ATTACH_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--cascade", metavar="ID", help="the conversation (cascade) id; default: the most recent")
    p.add_argument("--port", type=_port, help="agy's language-server port (skips discovery, still verified)")
    p.add_argument(
        "--tmux", metavar="PANE", help="agy's tmux pane (e.g. %%3), to type turns where RPC cannot"
    )
    p.set_defaults(handler=_attach)
