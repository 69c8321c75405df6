"""A pytest run a test starts on a sample suite of its own (tests/test_ci_skips.py, test_tmux_sockets.py,
test_parallel.py, test_pytest_cache.py): the command, without the plugins no sample needs.

Every installed pytest plugin loads itself (its ``pytest11`` entry point) in every pytest process, an
xdist worker's too. Measured on this machine (``/usr/bin/time``, a one-test sample, ``-n 0``): 2.0
CPU-seconds a run with them, 0.3 without; ``-n 2`` (three processes) 5.5 against 1.5. The costly ones
are the plugins of libtmux (imports all of libtmux), Hypothesis (imports all of hypothesis at the
terminal summary), anyio (imports trio where it is installed) and pytest-benchmark; the project's own
``addopts`` turns off all but Hypothesis's for the suite (no test uses a fixture of theirs), but a
sample run outside the project's directory does not read them. The samples use none of them, and what
the tests check is the project's own plugins (tests/ci_skips.py, tests/tmux_sockets.py,
tests/parallel.py) and pytest's cache with pytest-xdist, which stay on. ``-p no:NAME`` reaches the xdist workers too (they are started with
the controller's arguments).
"""

from __future__ import annotations

import sys

#: the plugins the sample runs turn off (entry-point names: ``importlib.metadata`` group ``pytest11``)
UNUSED = ("libtmux", "hypothesispytest", "anyio", "benchmark", "platformdirs")
#: and, where the run does not read the project's settings (``asyncio_mode``, ``timeout``: pytest
#: warns of an option no plugin knows), pytest-asyncio's and pytest-timeout's (no sample is a coroutine
#: or needs a timeout: the test's own ``subprocess.run(timeout=...)`` bounds it): 0.1 CPU-s a process
UNUSED_OUTSIDE_THE_PROJECT = ("asyncio", "timeout")


def pytest_command(*args: str, project_settings: bool = False) -> list[str]:
    """``python -m pytest`` with ``args``, the unused plugins off (``project_settings``: the run reads
    pyproject.toml's pytest settings, ``-c``)."""
    names = UNUSED if project_settings else UNUSED + UNUSED_OUTSIDE_THE_PROJECT
    off = [arg for name in names for arg in ("-p", f"no:{name}")]
    return [sys.executable, "-m", "pytest", *off, *args]
