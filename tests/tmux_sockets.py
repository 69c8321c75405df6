"""No test leaves a tmux socket file behind (loaded by ``tests/conftest.py``).

The tests' tmux servers run on private sockets named ``agyh-<what>-<pid>-<random>`` (``<pid>``: the
test process, an xdist worker's own). ``tmux kill-server`` does not remove the socket file, so a
fixture that only killed its server left ``/tmp/tmux-<uid>/agyh-chat-*`` files behind, one per run
(tests/omnigent_plugin/chat.py did). Here, once a test module is done (its module-scoped fixtures torn
down too), any such file of this process still there is removed and fails that module's last test's
teardown, naming the files: a leak is found where it is made, whichever worker runs it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from pathlib import Path

import pytest

PREFIX = "agyh-"


def tmux_dir() -> Path:
    """Where tmux puts its sockets: ``$TMUX_TMPDIR`` (or /tmp) / ``tmux-<uid>``."""
    return Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"


def left_behind(pid: int | None = None) -> list[Path]:
    """This process's test sockets (``agyh-<what>-<pid>-...``) in the tmux directory now."""
    pid = os.getpid() if pid is None else pid
    where = tmux_dir()
    if not where.is_dir():
        return []
    return sorted(p for p in where.iterdir() if p.name.startswith(PREFIX) and f"-{pid}-" in p.name)


def _module(item: pytest.Item | None) -> str | None:
    return None if item is None else item.nodeid.split("::")[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    result = yield  # the test's fixtures torn down, and the module's when it was the module's last
    if _module(nextitem) != _module(item):
        files = left_behind()
        for path in files:
            with contextlib.suppress(OSError):
                path.unlink()
        if files:
            names = ", ".join(p.name for p in files)
            raise AssertionError(f"{_module(item)} left tmux socket files behind (removed now): {names}")
    return result
