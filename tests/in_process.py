"""``agy-harness ARGS`` run in the test's own process: the command's entry (``composition.cli.main``)
with the same argv, its own standard streams, environment and logging, giving the same stdout, stderr
and exit code as the installed command (``python -m agy_harness.composition.cli ARGS``), without
starting an interpreter (0.2-0.8 CPU-s a command; a call costs a few milliseconds once the package
is imported).

For a test that reads what a command prints and its exit code. What only a real process shows stays
tested on one (tests/cli/test_cli_usage.py, test_every_command.py, test_ctrl_c_ends_cleanly.py, the
terminal tests): the interpreter's start and its imports, the exit status the shell sees, a traceback
on an uncaught error, signals (Ctrl-C 130, SIGTERM), a pseudo-terminal.

Each call has the process-wide state a real process would have fresh: the root logger without the
test runner's handlers (so a warning is printed on stderr as the command prints it), ``os.environ``
as given (restored after), and the signal handlers ``main`` installs restored after.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from agy_harness.composition.cli import main

#: what a test's real process did not inherit either (help is laid out to COLUMNS: tests set it)
DROPPED = ("COLUMNS", "LINES")


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    saved = dict(os.environ)
    for name in DROPPED:
        os.environ.pop(name, None)
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers = []  # (basicConfig adds the command's own handler only to a root without one)
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = handlers, level


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    names = ("SIGTERM", "SIGHUP", "SIGINT")
    saved = {sig: signal.getsignal(sig) for name in names if (sig := getattr(signal, name, None))}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:  # (None: not set from Python, nothing to restore)
                signal.signal(sig, handler)


@contextlib.contextmanager
def _no_earlier_garbage() -> Iterator[None]:
    """What earlier tests left for the garbage collector is finalized before the command runs, and
    none during it: a finalizer that logs (asyncio's "Future exception was never retrieved" for a
    playwright driver future an earlier test left in a reference cycle) wrote into the command's
    stderr through logging's last-resort handler, which a fresh process never shows (seen in a run
    beside two CPU-bound loops: 4 lines where the command printed 1)."""
    gc.collect()
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _text(raw: bytes) -> str:
    """What ``subprocess.run(text=True)`` makes of a stream: UTF-8, universal newlines."""
    return raw.decode().replace("\r\n", "\n").replace("\r", "\n")


def run_cli(
    *args: str, stdin: str = "", env: Mapping[str, str] | None = None, cwd: Path | str | None = None
) -> subprocess.CompletedProcess[str]:
    """``agy-harness ARGS`` in this process, as :func:`subprocess.run` with ``capture_output=True,
    text=True`` reports it (``env``: variables set on top of this process's environment; ``cwd``: the
    directory it runs in, this process's own restored after)."""
    argv = list(args)
    out, err = io.BytesIO(), io.BytesIO()
    streams = [
        io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
        for raw in (io.BytesIO(stdin.encode()), out, err)
    ]
    saved = sys.stdin, sys.stdout, sys.stderr
    where = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with _no_earlier_garbage(), _environment(env), _fresh_logging(), _signals_kept(), where:
        sys.stdin, sys.stdout, sys.stderr = streams
        try:
            code = main(argv)
        except SystemExit as exc:  # (main returns its code; a module that exits is told the same way)
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            for stream in streams:
                stream.flush()
    return subprocess.CompletedProcess(
        ["agy-harness", *argv], code, _text(out.getvalue()), _text(err.getvalue())
    )
