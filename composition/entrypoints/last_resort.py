"""A stop that always ends the process: the backstop behind the CLI's SIGTERM/SIGHUP handling.

The CLI turns SIGTERM/SIGHUP into a Ctrl-C-like stop that cleans up (``cli.Stopped``). Raising from a
signal handler is not guaranteed to reach ``asyncio.run`` (it can land in code that swallows it, or
clean-up can wait on something that never ends). In one loaded CI run of 8 the demo kept running for
60 s after SIGTERM: Python 3.11's ``asyncio.wait_for`` swallowed the shutdown's cancel (it is now
banned in the package by pyproject's ruff settings). A library may still swallow one, so the first
signal also arms this watchdog: if the process is still alive ``GRACE`` seconds later (or a second
signal comes), the registered clean-ups run (killing a demo's own tmux server) and the process exits
with ``128 + signal``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable

GRACE = 10.0

log = logging.getLogger("agy_harness.cli")
_cleanups: dict[int, Callable[[], None]] = {}
_armed = threading.Event()


def register(cleanup: Callable[[], None]) -> Callable[[], None]:
    """Run ``cleanup`` if the process has to be ended hard; call the returned function to unregister."""
    key = id(cleanup)
    _cleanups[key] = cleanup

    def unregister() -> None:
        _cleanups.pop(key, None)

    return unregister


def end_now(signum: int) -> None:
    for cleanup in list(_cleanups.values()):
        with contextlib.suppress(Exception):
            cleanup()
    with contextlib.suppress(Exception):
        print("agy-harness: stopped", file=sys.stderr, flush=True)
    os._exit(128 + signum)


def arm(signum: int) -> None:
    """After the first stop signal: end the process hard if it is still alive ``GRACE`` s later;
    a second signal ends it at once."""
    if _armed.is_set():
        end_now(signum)
    _armed.set()

    def watch() -> None:
        threading.Event().wait(GRACE)
        log.warning("still running %.0fs after signal %d: ending the process", GRACE, signum)
        end_now(signum)

    threading.Thread(target=watch, name="agy-harness-stop-watchdog", daemon=True).start()
