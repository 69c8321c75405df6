"""Shared fixtures for the whole suite, the ``pure`` marker, and a bytecode cache outside the tree."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _cache_bytecode_outside_the_tree() -> None:
    """With ``PYTHONDONTWRITEBYTECODE`` set (as on these machines) every run compiled every module
    again: collection took 5-7 s (9-13 s on a loaded machine). The bytecode goes instead to a private
    cache outside the source tree (``$AGY_HARNESS_CACHE/pycache``, the cache the omnigent venvs use;
    Python checks each file against its source), for this process and the CLI processes tests start.
    ``AGY_HARNESS_TEST_PYCACHE=0`` keeps Python's own setting."""
    if not sys.dont_write_bytecode or os.environ.get("AGY_HARNESS_TEST_PYCACHE") == "0":
        return
    root = Path(os.environ.get("AGY_HARNESS_CACHE") or Path.home() / ".cache" / "agy-harness")
    prefix = root / "pycache"
    try:
        prefix.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return  # nowhere to cache: compile as before
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_cache_bytecode_outside_the_tree()  # before the imports below: the package and the tests are cached too


def _forget_the_callers_tmux() -> None:
    """Run inside a tmux window, every ``tmux`` a test or the CLI it starts runs without ``-S``/``-L``
    reached the caller's own tmux server (tmux follows ``TMUX``), not the test's: four ACP tests failed
    and their sessions landed in the developer's tmux. The suite runs as from a plain terminal; the tests
    that set ``TMUX`` on purpose (tests/acp_agent/test_acp_inherited_tmux.py) pass it themselves."""
    for name in ("TMUX", "TMUX_PANE"):
        os.environ.pop(name, None)


_forget_the_callers_tmux()


def _ledger_outside_the_users() -> None:
    """The sessions the tests run record their gate decisions (the decision ledger): into a ledger of
    this run's own (``AGY_HARNESS_LEDGER_DIR``, for the CLI processes tests start too), never into the
    user's. A test that checks the ledger gives its own (``ledger=``)."""
    if "AGY_HARNESS_LEDGER_DIR" not in os.environ:
        import atexit
        import shutil
        import tempfile

        run = tempfile.mkdtemp(prefix="agy-harness-tests-")
        atexit.register(shutil.rmtree, run, ignore_errors=True)  # (a run left one behind each time)
        os.environ["AGY_HARNESS_LEDGER_DIR"] = str(Path(run) / "ledger")


_ledger_outside_the_users()

import socket  # noqa: E402
import subprocess  # noqa: E402
from collections.abc import AsyncIterator, Iterator  # noqa: E402

import pytest  # noqa: E402

from agy_harness.adapters.simulator import Simulator  # noqa: E402

from . import real_omnigent  # noqa: E402
from .real_omnigent import OmnigentServer, require_omnigent_venv  # noqa: E402

pytest_plugins = [
    "tests.ci_skips",  # in CI a skipped test fails the run
    "tests.chromium",  # one chromium per worker for the browser tests
    "tests.parallel",  # the workers (-n auto) and which tests share one (xdist groups)
    "tests.tmux_sockets",  # no test leaves a tmux socket file behind
]

ROOT = Path(__file__).resolve().parents[1]

#: the pure tests (``-m pure``): the core and pure units, no network, files, subprocesses or real sleeps
PURE = (
    "tests/core/",
    "tests/rpc/test_codec.py",
    "tests/rpc/test_bounded.py",
    "tests/composition/test_harness_unit.py",  # the session's roles on a virtual clock
    "tests/composition/test_read_driver.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.resolve().relative_to(ROOT).as_posix().startswith(PURE):
            item.add_marker(pytest.mark.pure)


@pytest.fixture(autouse=True)
def _pure_tests_do_no_io(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked ``pure`` that opens a connection or starts a process fails: the mark stays true."""
    if request.node.get_closest_marker("pure") is None:
        return

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pure test does no I/O (tests/conftest.py: PURE)")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket.socket, "connect_ex", refused)
    monkeypatch.setattr(subprocess.Popen, "__init__", refused)


def pytest_configure(config: pytest.Config) -> None:
    """The one-time venv builds (tests/real_omnigent.py) report on the terminal, past output capture
    (an xdist worker's terminal output is not shown: there, on its standard error, which is)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is None or capture is None:
        return
    worker = hasattr(config, "workerinput")

    def to_terminal(message: str) -> None:
        with capture.global_and_fixture_disabled():
            if worker:
                print(f"agy-harness tests: {message}", file=sys.stderr, flush=True)
            else:
                terminal.write_line(f"agy-harness tests: {message}")

    real_omnigent.report = to_terminal


#: the session fixtures that need the real omnigent's venv (and, for the plugin, an overlay of ours)
NEEDS_OMNIGENT = {"omnigent_server", "plugin_python"}


def pytest_collection_finish(session: pytest.Session) -> None:
    """The one-time builds (the real omnigent's venv, the plugin's dependency overlay: minutes, once
    per machine) happen here, before any test's clock (pytest-timeout's ``timeout`` is per test) and
    only when a selected test needs them; parallel workers wait for the one that builds (a file lock).
    Nothing is built when they are there already; a build that fails is left to the fixture, which
    skips (locally) or fails (CI) with the reason."""
    if session.config.option.collectonly:
        return
    names: set[str] = set()
    for item in session.items:
        info = getattr(item, "_fixtureinfo", None)
        names.update(info.names_closure if info is not None else ())
    if not names & NEEDS_OMNIGENT:
        return
    from .omnigent_plugin.venv import build_ahead

    build_ahead(plugin="plugin_python" in names)


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    """A running agy simulator (profile 1.0.10, fast pacing, gates never time out); stopped after."""
    async with Simulator(profile="1.0.10", gate_timeout=None) as running:
        yield running


@pytest.fixture(scope="session")
def omnigent_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The REAL omnigent 0.19.1 server on 127.0.0.1 (sqlite in a temp dir), its base URL; stopped after.

    One server for the whole run; each test creates its own sessions (`tests.real_omnigent.create_session`).
    Skipped when the omnigent venv cannot be built (in CI a skip fails the run: tests/ci_skips.py).
    """
    venv = require_omnigent_venv()
    with OmnigentServer(tmp_path_factory.mktemp("omnigent-server"), venv=venv) as server:
        yield server.url
