"""``agy-harness sim [--profile 1.0.10] [--scenario NAME]``: run the simulator by hand until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from .profiles import DEFAULT_PROFILE, PROFILES, get_profile
from .scenarios import SCENARIOS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="agy-harness sim", description="Run the agy simulator (loopback, TLS, HTTP/2)."
    )
    p.add_argument("--profile", default=DEFAULT_PROFILE, choices=sorted(PROFILES), help="agy version profile")
    p.add_argument("--scenario", default="idle", choices=sorted(SCENARIOS), help="turns to play at start-up")
    p.add_argument("--pace", type=float, default=1.0, help="generation pacing (1 = human, 0 = instant)")
    p.add_argument("--gate-timeout", type=float, default=None, help="seconds before a WAITING gate times out")
    p.add_argument(
        "--log-file", default=None, help="write agy's port lines here, as agy does (discovery reads them)"
    )
    p.add_argument("--recording", default=None, help="serve this agy-harness record file as the conversation")
    p.add_argument("--version", action="store_true", help="print the profile's version as agy does, and exit")
    return p


async def serve(args: argparse.Namespace, *, ready: asyncio.Event | None = None, out: object = None) -> int:
    from .simulator import Simulator

    stream = out or sys.stdout
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    try:
        async with Simulator(
            profile=args.profile,
            pace=args.pace,
            gate_timeout=args.gate_timeout,
            log_file=getattr(args, "log_file", None),
        ) as sim:
            if getattr(args, "recording", None):
                from .recording import load_recording

                load_recording(sim, args.recording)
            print(f"agy simulator {sim.version}", file=stream)  # type: ignore[arg-type]
            print(f"port {sim.port}", file=stream)  # type: ignore[arg-type]
            print(f"plain_port {sim.plain_port}", file=stream)  # type: ignore[arg-type]
            print(f"cascade {sim.cascade_id}", file=stream, flush=True)  # type: ignore[arg-type]
            for text in SCENARIOS[args.scenario]:
                await sim.submit_user_turn(text)
                with contextlib.suppress(TimeoutError):
                    await sim.wait_idle(timeout=120)
            if ready is not None:
                ready.set()
            await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.version:
        sys.stdout.write(get_profile(args.profile).version_text())
        return 0
    try:
        return asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
