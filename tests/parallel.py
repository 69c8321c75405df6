"""The suite in parallel (pytest-xdist; loaded by ``tests/conftest.py``).

``python -m pytest -q`` runs on several worker processes (``-n auto --dist loadgroup`` in
pyproject.toml's ``addopts``). Two things are decided here:

* **How many workers** ``-n auto`` starts: :data:`WORKERS_PER_CPU` per CPU this process may run on.
  Most tests wait on subprocesses, sockets and screens (a simulator's pacing, a CLI starting, a tmux
  pane, chromium), not on the CPU, so more workers than cores finish sooner (README: the measured
  figures). ``PYTEST_XDIST_AUTO_NUM_WORKERS=N`` (xdist's own variable) or ``-n N`` sets it; ``-n 0``
  runs in this one process.
* **Which tests share a worker**: a fixture the suite defines with a wider scope than one test (a
  module's simulator or omnigent server, a module's built ledger, the session's omnigent server) is
  started once per *process* that uses it. Under plain load balancing every worker that got one of
  its tests would start it again. So the tests that share such a fixture -- transitively: a test that
  uses two joins both groups -- get one ``xdist_group`` and ``--dist loadgroup`` sends each group to
  one worker. Fixtures that are cheap to share across workers by design are left out
  (:data:`SHARED_ACROSS_WORKERS`: built once per run under a file lock), and so are the ones each
  worker starts for whichever tests it gets (:data:`PER_WORKER`: the worker's chromium). Tests with
  function-scoped fixtures only (a simulator, a chromium page, a tmux server of their own) spread freely.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: workers per CPU for ``-n auto``: measured on 2 cores (README, "Tests"): the suite mostly waits
WORKERS_PER_CPU = 2
#: never more workers than this, whatever the machine (each may start a browser or an omnigent server)
MAX_WORKERS = 16

#: session fixtures that are not a reason to keep their tests on one worker (tests/omnigent_plugin/
#: conftest.py): ``plugin_python`` is built once per run for all workers (a file lock); ``plugin_server``
#: (an omnigent server its tests share by session id) and ``plugin_host`` (the client home whose host
#: daemon hosts their sessions) are started by each worker that needs one. (``plugin_zygote``, which
#: the runner tests fork their harness processes from, is not: they keep to one worker, so one zygote,
#: ~1.7 CPU-seconds to start, serves all ~16 of them.)
SHARED_ACROSS_WORKERS = frozenset({"plugin_python", "plugin_server", "plugin_host"})
#: fixtures each worker starts for whichever of their tests it runs (tests/chromium.py: the worker's
#: chromium, a module's): one per process by design, so not a reason to keep their tests on one worker
#: (the ~30 browser tests of tests/board would run on one worker, one after another)
PER_WORKER = frozenset({"chromium_per_worker", "chromium_per_module"})

SESSION = "session:"  # the key of a session-scoped fixture (one instance per process)


def cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or ``taskset``'s limit)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


def auto_workers(env: dict[str, str] | os._Environ[str] = os.environ) -> int:
    """``-n auto``: ``PYTEST_XDIST_AUTO_NUM_WORKERS`` when set to a number, else per the CPUs."""
    given = env.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "").strip()
    if given.isdigit():
        return int(given)
    return max(1, min(MAX_WORKERS, WORKERS_PER_CPU * cpus()))


@pytest.hookimpl(optionalhook=True)  # (optional: `-p no:xdist` runs without it)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return auto_workers()


def _the_suites(fixturedef: Any, root: Path) -> bool:
    """A fixture defined in the suite (a test module, a conftest), not by a plugin (pytest's own,
    pytest-asyncio's: installed packages, wherever the venv lives)."""
    where = Path(getattr(getattr(fixturedef.func, "__code__", None), "co_filename", "") or "/")
    return where.is_relative_to(root) and "site-packages" not in where.parts


def _shared_keys(item: pytest.Item) -> list[str]:
    """What ``item`` shares with other tests: one key per wider-scoped fixture of the suite's own it
    uses (a module-scoped one is one per module)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    root = item.config.rootpath
    keys = []
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if fixturedef.scope == "function" or name in SHARED_ACROSS_WORKERS | PER_WORKER:
                continue  # per test, or shared across workers or one per worker by design
            if not _the_suites(fixturedef, root):
                continue  # a plugin's own
            if fixturedef.scope in ("module", "class"):
                keys.append(f"{item.nodeid.split('::')[0]}::{name}")
            else:  # session, package: named first in its group (SESSION sorts before "tests/...")
                keys.append(f"{SESSION}{name}")
    return keys


def groups(items: list[pytest.Item]) -> dict[str, str]:
    """Node id -> group name, for the tests that share a wider-scoped fixture (connected through any
    shared fixture: union-find over the keys); the group is named by its first key in sorted order."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    keys = {item.nodeid: _shared_keys(item) for item in items}
    for shared in keys.values():
        for other in shared[1:]:
            a, b = find(shared[0]), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {node: find(shared[0]) for node, shared in keys.items() if shared}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks (its hook runs last)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    named = groups(items)
    for item in items:
        if item.nodeid in named and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(named[item.nodeid]))
