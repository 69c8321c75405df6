"""``agy-harness demo`` (the simulator, end to end) and ``agy-harness attach`` (a real agy).

The demo starts the embedded agy simulator and drives one scripted session through the public API:
a text turn, a gated command approved, a gated command denied, a question, and an interrupt while the
model is still writing. Everything is rendered live by the terminal sink; gates are put to you at the
keyboard, or answered by a visible policy with ``--auto`` (what CI runs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .cli_args import GATE_HELP, SECONDS, command, non_negative, positive

if TYPE_CHECKING:  # (the CLI imports this module for its arguments: --help stays light)
    from agy_harness.ports.events import Event, GateOpened
    from agy_harness.ports.protocols import EventSink, GateAnswer, ModelCatalog

log = logging.getLogger("agy_harness.demo")

#: The scripted session: (what the user types, what the demo does while it runs).
SCRIPT: list[tuple[str, str]] = [
    ("Say hello in one short sentence.", "wait"),
    ("run: git status", "wait"),
    ("run: rm -rf build", "wait"),
    ("ask: which part should we work on first?", "wait"),
    ("Write a long story about a lighthouse keeper.", "interrupt"),
]


#: the ``--auto`` policy's name in the decision ledger (``decided_by.kind`` "auto": no human was asked)
AUTO_POLICY = "demo --auto"


def auto_policy(gate: GateOpened) -> GateAnswer:
    """``--auto``: approve commands unless they delete things; pick the first option of a question;
    deny every other kind (a browser action, a deploy...: issue 45), which no script here asks."""
    from agy_harness.ports.protocols import GateAnswer

    if gate.kind == "permission" and gate.interaction not in ("", "permission", "runCommand"):
        return GateAnswer(allow=False)
    if gate.kind == "permission":
        command = gate.permission.command_line or gate.permission.target if gate.permission else ""
        return GateAnswer(allow="rm " not in f"{command} ")
    return GateAnswer(selections=tuple((q.options[0].id,) if q.options else ("ok",) for q in gate.questions))


class TapSink:
    """Passes everything to ``inner`` and lets the demo wait for what it needs to see.

    The demo's limit is on agy's silence, not on the turn: it restarts with every event, and it does
    not run while a gate waits for the human (a person may think as long as they like).
    """

    surface = "demo"  # where its human decides (the decision ledger)

    def __init__(self, inner: EventSink, auto_policy: str = "") -> None:
        self.inner = inner
        #: the policy that answers instead of a human ("": a human answers): the ledger records it so
        self.auto_policy = auto_policy
        #: why the demo cannot go on (the decision ledger cannot record its answers): ends the run
        self.fatal: BaseException | None = None
        self.seen: list[Event] = []
        self._changed = asyncio.Event()
        self.asking = 0  # gates put to the human right now
        self.last_activity = asyncio.get_running_loop().time()  # an event, or a gate's answer

    async def deliver(self, events: Sequence[Event]) -> int:
        n = await self.inner.deliver(events)
        self.seen.extend(events[:n])
        self._touch()
        return n

    async def ask(self, gate: GateOpened) -> GateAnswer:
        self.asking += 1
        try:
            return await self.inner.ask(gate)
        finally:
            self.asking -= 1
            self._touch()

    async def withdraw(self, gate_id: str) -> None:
        await self.inner.withdraw(gate_id)

    def bind_model_catalog(self, catalog: ModelCatalog) -> None:
        from agy_harness.ports.protocols import ShowsModelNames

        if isinstance(self.inner, ShowsModelNames):  # (the terminal shows agy's display names)
            self.inner.bind_model_catalog(catalog)

    def _touch(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()
        self._changed.set()

    def stop(self, reason: BaseException) -> None:
        """The demo cannot go on: :meth:`wait_for` raises ``reason`` (the first one) at once."""
        if self.fatal is None:
            self.fatal = reason
        self._touch()

    async def wait_for(self, predicate: Callable[[Event], bool], start: int, timeout: float) -> Event:
        """The first event from ``start`` on that matches; TimeoutError after ``timeout`` s of agy's
        silence (never while a gate waits for the human: the clock starts again after the answer)."""
        loop = asyncio.get_running_loop()
        checked = start
        while True:
            if self.fatal is not None:
                raise self.fatal
            for event in self.seen[checked:]:
                if predicate(event):
                    return event
            checked = len(self.seen)
            self._changed.clear()
            if self.asking and self.fatal is None:
                await self._changed.wait()
                continue
            left = self.last_activity + timeout - loop.time()
            if left <= 0:
                raise TimeoutError(f"agy did nothing for {timeout:.0f} s")
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns normally when it is
            # cancelled in the same loop pass as its awaitable completes, swallowing the cancel. A
            # SIGTERM cancels every task at once, and the gate's cancelled ask sets _changed: the
            # demo then went on waiting for agy (60 s) instead of stopping.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._changed.wait()


class WatchedLedger:
    """The demo's decision ledger (this install's): a decision it cannot record ends the demo with one
    line (``UserFacingError``: exit 1), where the gate would otherwise be asked again and again --
    with ``--auto``, at once and for ever -- and each answer refused, nothing sent."""

    def __init__(self, inner: Any, tap: TapSink) -> None:
        self.inner = inner
        self.tap = tap

    async def record(self, entry: Any) -> int:
        from agy_harness.ports.errors import LedgerUnavailable

        from .errors import UserFacingError

        try:
            return int(await self.inner.record(entry))
        except LedgerUnavailable as exc:
            self.tap.stop(
                UserFacingError(
                    f"the demo stops: the decision ledger cannot record its answers ({exc}); fix that "
                    f"directory, or set AGY_HARNESS_LEDGER_DIR to a private directory of yours"
                )
            )
            raise


def _ledger(tap: TapSink) -> WatchedLedger:
    from ..root.container import default_ledger

    return WatchedLedger(default_ledger(), tap)


def _turn_over(e: Event) -> bool:
    from agy_harness.ports.events import StatusChanged

    return isinstance(e, StatusChanged) and e.status in ("idle", "failed")


async def run_demo(
    *,
    auto: bool,
    profile: str,
    pace: float,
    console: Any = None,
    timeout: float = 60.0,
    keyboard: Any = None,
) -> int:
    from agy_harness.adapters.simulator.profiles import get_profile
    from agy_harness.adapters.sinks.keyboard import Keyboard
    from agy_harness.adapters.sinks.terminal import TerminalSink
    from agy_harness.adapters.sinks.terminal_screen import logs_through

    if not auto and keyboard is None:
        keyboard = Keyboard()
    terminal = TerminalSink(console=console, auto_answer=auto_policy if auto else None, keyboard=keyboard)
    tap = TapSink(terminal, auto_policy=AUTO_POLICY if auto else "")
    with logs_through(terminal.screen):
        try:
            if get_profile(profile).serves("SendUserCascadeMessage"):
                await _demo_on_simulator(terminal, tap, profile=profile, pace=pace, timeout=timeout)
            else:
                await _demo_in_tmux(terminal, tap, profile=profile, pace=pace, timeout=timeout)
        finally:
            terminal.close()
    return 0


async def _demo_on_simulator(
    terminal: Any, tap: TapSink, *, profile: str, pace: float, timeout: float
) -> None:
    from agy_harness.adapters.simulator import Simulator

    from ..root.container import make_container
    from ..root.session import session_from

    async with Simulator(profile=profile, pace=pace) as sim:
        terminal.info(f"agy simulator {sim.version} listening on 127.0.0.1:{sim.port}")
        container = make_container(
            port=sim.port, cascade_id=sim.cascade_id, sink=tap, version_text=sim.version, ledger=_ledger(tap)
        )
        async with session_from(container) as session:
            await _play(session, terminal, tap, timeout)


async def _demo_in_tmux(terminal: Any, tap: TapSink, *, profile: str, pace: float, timeout: float) -> None:
    from ..root.container import make_container
    from ..root.session import session_from
    from .demo_tmux import tui_in_tmux

    async with tui_in_tmux(profile, pace) as tui:
        terminal.info(
            f"agy {profile} (simulated) runs in tmux; it takes turns only at its keyboard, so they are "
            f"typed into its pane. Watch it: tmux -L {tui.socket_name} attach -r"
        )
        container = make_container(
            port=tui.port,
            cascade_id=tui.cascade_id,
            sink=tap,
            version_text=profile,
            tmux_target=tui.pane_id,
            tmux_server=tui.server,
            ledger=_ledger(tap),
        )
        async with session_from(container) as session:
            await _play(session, terminal, tap, timeout)


async def _play(session: Any, terminal: Any, tap: TapSink, timeout: float) -> None:
    terminal.info(session.capabilities.describe())
    for text, action in SCRIPT:
        start = len(tap.seen)
        served = await session.send(text)
        log.info("turn sent by %s", served)
        if action == "interrupt":
            await tap.wait_for(lambda e: e.type == "text_delta", start, timeout)
            terminal.info("the demo interrupts agy while it writes (what /interrupt does in attach)")
            await session.interrupt()  # the harness reports what it did as a notice
            await tap.wait_for(lambda e: e.type == "user_message", start, timeout)
        await tap.wait_for(_turn_over, start, timeout)
        await asyncio.sleep(0.05)
    from agy_harness.ports.events import Usage

    usage = [e for e in tap.seen if isinstance(e, Usage)]
    total = usage[-1].cumulative_input_tokens if usage else 0
    terminal.info(f"demo done: {len(tap.seen)} events, {total:,} input tokens")


def _demo(args: argparse.Namespace) -> int:
    return asyncio.run(
        run_demo(auto=args.auto, profile=args.profile, pace=args.pace, timeout=args.idle_limit)
    )


DEMO_DESCRIPTION = """\
A scripted session on the embedded agy simulator, rendered live: a text turn, a command you approve,
one you deny, a question, and an interrupt while agy is still writing. Gates are put to you at the
keyboard; --auto answers them by a visible policy instead (what CI runs)."""

DEMO_EPILOG = f"""\
{GATE_HELP}

examples:
  agy-harness demo                    you answer the gates
  agy-harness demo --auto --pace 0    unattended and instant
  agy-harness demo --profile 1.0.4    an agy without RPC turn-send: the demo runs it in a tmux pane
                                      of its own and types the turns there (needs tmux)"""


def add_demo_command(sub: Any) -> None:
    from agy_harness.adapters.simulator.profiles import DEFAULT_PROFILE, PROFILES

    p = command(
        sub,
        "demo",
        summary="a scripted session on the embedded agy simulator (you answer the gates)",
        description=DEMO_DESCRIPTION,
        epilog=DEMO_EPILOG,
    )
    p.add_argument(
        "--auto", action="store_true", help="answer gates by a visible policy (default: you answer)"
    )
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=sorted(PROFILES),
        help="the agy version the simulator plays (default %(default)s)",
    )
    p.add_argument(
        "--pace",
        type=non_negative,
        default=1.0,
        metavar="SCALE",
        help="the model's speed: 1 = like a person reads (default), 0 = instant",
    )
    p.add_argument(
        "--idle-limit",
        type=positive,
        default=60.0,
        metavar=SECONDS,
        help="give up when agy does nothing for this long (default 60; a gate waiting for you does not count)",
    )
    p.set_defaults(handler=_demo)
