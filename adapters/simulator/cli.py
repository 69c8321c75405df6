"""``agy-harness sim``: run the agy simulator by hand, headless (ports printed) or with its TUI.

The arguments are declared here (:func:`add_arguments`), so ``agy-harness sim`` and
``python -m agy_harness.adapters.simulator`` take the same ones; the ``agy-harness`` CLI passes its
own checked number types. Ctrl-C stops it (exit 130), SIGTERM too (143), after a clean stop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .profiles import DEFAULT_PROFILE, PROFILES, get_profile
from .scenarios import SCENARIOS

EXIT_INTERRUPTED = 130  # 128 + SIGINT

SUMMARY = "run the agy simulator by hand: headless for attach/acp/doctor, or its TUI (--tui)"

DESCRIPTION = """\
Run the embedded agy simulator (a language server on 127.0.0.1, TLS, recorded agy shapes) until
Ctrl-C. Headless, it prints its version, port and conversation id, and the command that follows
it; `agy-harness attach` in another terminal finds it by itself. With --tui it opens the simulated
agy TUI in this terminal instead: type turns and answer its prompts as in agy, and follow it with
`agy-harness attach --tmux PANE` from another tmux pane (the way to try an agy before 1.0.10)."""

EPILOG = """\
examples:
  agy-harness sim                          then, in another terminal: agy-harness attach
  agy-harness sim --profile 1.0.4 --tui    an agy without RPC turn-send, in this terminal
                                           (in tmux; another pane: agy-harness attach --tmux %0)
  agy-harness sim --scenario gate --pace 0 --log-file /tmp/agy.log
                                           a gated command waiting, instantly; discovery reads the log"""


def add_arguments(
    p: argparse.ArgumentParser,
    *,
    number: Callable[[str], float] = float,
    positive: Callable[[str], float] = float,
) -> None:
    """The simulator's options (``number``/``positive``: the caller's checked types)."""
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=sorted(PROFILES),
        help="the agy version it plays (default %(default)s; 1.0.4 has no stream and no RPC turn-send)",
    )
    p.add_argument(
        "--tui", action="store_true", help="open the simulated agy TUI in this terminal (default: headless)"
    )
    p.add_argument(
        "--scenario",
        default="idle",
        choices=sorted(SCENARIOS),
        metavar="NAME",
        help=f"turns it plays at start-up: {', '.join(sorted(SCENARIOS))} (default %(default)s: none)",
    )
    p.add_argument(
        "--pace",
        type=number,
        default=1.0,
        metavar="SCALE",
        help="the model's speed: 1 = like a person reads (default), 0 = instant",
    )
    p.add_argument(
        "--gate-timeout",
        type=positive,
        default=None,
        metavar="SECONDS",
        help="a waiting gate times out and is asked again after this long (default: never)",
    )
    p.add_argument(
        "--log-file",
        default=None,
        metavar="FILE",
        help="write agy's port lines here, as agy does; discovery reads them (default: none)",
    )
    p.add_argument(
        "--recording",
        default=None,
        metavar="FILE",
        help="serve this `agy-harness record` file as the conversation (default: a new one)",
    )
    p.add_argument(
        "--version", action="store_true", help="print the version as `agy --version` does, and exit"
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="agy-harness sim",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    return p


async def serve(args: argparse.Namespace, *, ready: asyncio.Event | None = None, out: object = None) -> int:
    """Headless: serve until SIGINT/SIGTERM; returns 128 + the signal (0 when ``ready`` callers stop it
    otherwise)."""
    from .simulator import Simulator

    stream: Any = out or sys.stdout
    stop = asyncio.Event()
    stopped_by: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: int) -> None:
        stopped_by.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)
    try:
        async with Simulator(
            profile=args.profile,
            pace=args.pace,
            gate_timeout=args.gate_timeout,
            log_file=getattr(args, "log_file", None),
            workspace=where_started(),
        ) as sim:
            if getattr(args, "recording", None):
                from .recording import load_recording

                load_recording(sim, args.recording, getattr(args, "recorded_lines", None))
            print(f"agy simulator {sim.version}", file=stream)
            print(f"port {sim.port}", file=stream)
            print(f"plain_port {sim.plain_port}", file=stream)
            print(f"cascade {sim.cascade_id}", file=stream, flush=True)
            if stream is sys.stdout and sys.stderr.isatty():  # a person: what to do next
                print(  # the command alone on its line: copied whole, it runs as it is
                    f"next, in another terminal (Ctrl-C stops the simulator):\n  agy-harness attach --port {sim.port}",
                    file=sys.stderr,
                    flush=True,
                )
            await play(sim, args.scenario)
            if ready is not None:
                ready.set()
            await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
    if stopped_by:
        print("\nagy simulator stopped", file=sys.stderr)  # (on a new line: the terminal echoed ^C)
        return 128 + stopped_by[0]
    return 0


def where_started() -> str:
    """The simulator's workspace: the directory it was started in, as agy's (agy works in the directory
    it was started in; its conversations report it as ``workspaceFolderAbsoluteUri``). The library's
    Simulator keeps a recorded default; the command, run by a person in a project, plays that project."""
    return os.getcwd()


async def play(sim: Any, scenario: str) -> None:
    """The scenario's turns, one after another (each until agy is idle again: a gate waits for you)."""
    for text in SCENARIOS[scenario]:
        await sim.submit_user_turn(text)
        with contextlib.suppress(TimeoutError):
            await sim.wait_idle(timeout=120)


async def tui(args: argparse.Namespace) -> int:
    """The simulated agy TUI in this terminal (it hosts the simulator, as agy's TUI hosts its server)."""
    from .simulator import Simulator
    from .tui import Tui
    from .tui_terminal import raw_terminal

    extra: dict[str, Any] = {
        "gate_timeout": args.gate_timeout,
        "log_file": args.log_file,
        "workspace": where_started(),
    }
    async with Simulator(profile=args.profile, pace=args.pace, **extra) as sim:
        if args.recording:
            from .recording import load_recording

            load_recording(sim, args.recording, getattr(args, "recorded_lines", None))
        screen = Tui(sim, args.profile)
        pane = os.environ.get("TMUX_PANE")
        screen.notice = (
            f"follow it from another tmux pane: agy-harness attach --tmux {pane}"
            if pane
            else "run this in tmux to follow it with agy-harness attach --tmux PANE"
        )
        player = asyncio.get_running_loop().create_task(play(sim, args.scenario))  # shown as it plays
        try:
            with raw_terminal():
                await screen.run()
        finally:
            player.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await player
        return screen.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(list(sys.argv[1:] if argv is None else argv)))


def refused(args: argparse.Namespace) -> str | None:
    """What in ``args`` cannot be served, in one line naming the file or option and what to do
    (None: nothing). Checked before anything starts; the recording is read here once."""
    if args.recording:
        from .recording import BadRecording, read_recording

        try:
            args.recorded_lines = read_recording(args.recording)
        except BadRecording as exc:
            return f"--recording {exc}"
    log_file = getattr(args, "log_file", None)
    if log_file and os.path.isdir(log_file):
        return f"--log-file {log_file}: a directory; name a file (agy's own is ~/.gemini/antigravity-cli/cli.log)"
    if log_file:  # where agy's port lines cannot go, discovery would never read them: said, not made
        parent = os.path.dirname(os.path.abspath(log_file))
        if not os.path.isdir(parent):
            return (
                f"--log-file {log_file}: there is no directory {parent}; create it or name a file elsewhere"
            )
        if not os.access(parent, os.W_OK) or (os.path.exists(log_file) and not os.access(log_file, os.W_OK)):
            return f"--log-file {log_file}: not writable by you; name a file in a directory of yours"
    return None


def run(args: argparse.Namespace) -> int:
    if args.version:
        sys.stdout.write(get_profile(args.profile).version_text())
        return 0
    problem = refused(args)
    if problem is not None:
        print(f"agy-harness sim: {problem}", file=sys.stderr)
        return 2
    if args.tui and not (os.isatty(0) and os.isatty(1)):
        print(
            "agy-harness sim: --tui needs a terminal (run it in tmux or a terminal window)", file=sys.stderr
        )
        return 2
    try:
        return asyncio.run(tui(args) if args.tui else serve(args))
    except KeyboardInterrupt:  # a Ctrl-C before the handlers were in place
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
