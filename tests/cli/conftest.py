"""A person at a terminal: the real ``agy-harness`` command in a tmux pane of the test's own.

The test types keys into the pane and reads its screen (``capture-pane``), as a person would. Each
command runs as ``<command>; echo EXIT=$?`` so its exit code shows on the screen when it ends.
tmux runs on a private socket, killed after the test.

Waiting for the screen (:meth:`Pane.wait`) reads it again only when the pane wrote something since
the last read (tmux's ``pipe-pane`` appends its output to a file: a ``stat`` every 50 ms tells), and
at least every second anyway: each read is a ``tmux`` process, 20 a second while a command ran
silently (a cold start, a wait on agy).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

if shutil.which("tmux") is None:  # (in CI a skip fails the run: tests/ci_skips.py)
    pytest.skip("the tmux binary is not on PATH (.ci/run installs it)", allow_module_level=True)

import libtmux

EXIT = re.compile(r"^EXIT=(\d+)$", re.M)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def cli(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "agy_harness.composition.cli", *args])


#: how often a waiting test looks for new output (a stat), and reads the screen without any
POLL, REREAD = 0.05, 1.0


class Pane:
    def __init__(self, server: libtmux.Server, pane_id: str, output: Path | None = None) -> None:
        self.server = server
        self.pane_id = pane_id
        self.output = output  # where tmux appends the pane's output (None: read every POLL)

    def _written(self) -> int:
        """How much the pane has written (-1 when there is no output file to tell)."""
        if self.output is None:
            return -1
        try:
            return self.output.stat().st_size
        except OSError:
            return -1

    def screen(self) -> str:
        """Everything the pane showed (scroll-back included), wrapped lines joined."""
        out = self.server.cmd("capture-pane", "-p", "-J", "-S", "-2000", "-t", self.pane_id).stdout
        return "\n".join(row.rstrip() for row in out)

    def visible(self) -> list[str]:
        """The rows on screen now, without the empty ones at the bottom."""
        rows = [row.rstrip() for row in self.server.cmd("capture-pane", "-p", "-t", self.pane_id).stdout]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    def type(self, text: str, enter: bool = True) -> None:
        self.server.cmd("send-keys", "-t", self.pane_id, "-l", "--", text)
        if enter:
            self.key("Enter")

    def key(self, *keys: str) -> None:
        self.server.cmd("send-keys", "-t", self.pane_id, *keys)

    def wait(self, what: str | Callable[[str], bool], timeout: float = 30.0, *, after: int = 0) -> str:
        """The screen once it shows ``what`` (text, or a predicate on the screen) past offset ``after``."""
        deadline = time.monotonic() + timeout
        while True:
            written, read_at = self._written(), time.monotonic()
            screen = self.screen()
            tail = screen[after:]
            if (what in tail) if isinstance(what, str) else what(tail):
                return screen
            while True:  # until the pane wrote more (or a while passed, or no file tells)
                if time.monotonic() > deadline:
                    raise AssertionError(f"the screen never showed {what!r}:\n{screen}")
                time.sleep(POLL)
                now = self._written()
                if now < 0 or now != written or time.monotonic() - read_at >= REREAD:
                    break

    def wait_exit(self, timeout: float = 60.0) -> int:
        screen = self.wait(lambda s: EXIT.search(s) is not None, timeout)
        match = EXIT.search(screen)
        assert match is not None
        return int(match.group(1))


class Terminal:
    """Panes on one private tmux server."""

    def __init__(self, tmp_path: Path) -> None:
        self.server = libtmux.Server(socket_name=f"agyh-cli-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self.tmp_path = tmp_path
        self.outputs = Path(tempfile.mkdtemp(prefix="agyh-panes-"))

    def run(
        self, command: str, *, env: dict[str, str] | None = None, width: int = 120, height: int = 50
    ) -> Pane:
        environment = {"COLUMNS": "", "LINES": ""}
        environment.update(env or {})
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in environment.items() if v)
        unset = " ".join(k for k, v in environment.items() if not v)
        script = f"cd {shlex.quote(str(self.tmp_path))}; unset {unset}; {exports + ' ' if exports else ''}{command}; echo EXIT=$?; sleep 600"
        session = self.server.new_session(
            session_name=f"t{uuid.uuid4().hex[:6]}",
            window_command=f"bash --norc --noprofile -c {shlex.quote(script)}",
            x=width,
            y=height,
        )
        pane = session.active_window.active_pane
        assert pane is not None and pane.pane_id is not None
        output = self.outputs / f"pane-{pane.pane_id.lstrip('%')}.out"  # (not in the test's directory)
        output.touch()
        self.server.cmd("pipe-pane", "-t", pane.pane_id, "-O", f"cat >> {shlex.quote(str(output))}")
        return Pane(self.server, pane.pane_id, output)

    def close(self) -> None:
        name = self.server.socket_name or ""
        with contextlib.suppress(Exception):
            self.server.kill()
        shutil.rmtree(self.outputs, ignore_errors=True)
        with contextlib.suppress(OSError):
            (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / name).unlink()


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    t = Terminal(tmp_path)
    try:
        yield t
    finally:
        t.close()


@pytest.fixture(scope="session")
def auto_demo() -> subprocess.CompletedProcess[str]:
    """``agy-harness demo --auto --pace 0`` (what CI runs), run once as a process of its own: what it
    printed and its exit code, read by the tests of its polish and of its thinking (each asserts its
    own part of the same run; none changes anything the run left). One run instead of three: ~1.1
    CPU-s each."""
    return subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", "demo", "--auto", "--pace", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
