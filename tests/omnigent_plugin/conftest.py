from __future__ import annotations

import asyncio
import contextlib
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator
from tests.real_omnigent import OmnigentServer, server_env

from .host import stop_host
from .test_registry import readme_spec
from .venv import shared_plugin_environment
from .zygote import Zygote


@pytest.fixture(scope="session")
def plugin_python() -> Path:
    """Python of omnigent's environment with this checkout's agy-harness (and its plugin) installed:
    cached by what it is made of, one for every xdist worker of a run and for the runs after while the
    checkout's wheel inputs are unchanged (``venv.shared_plugin_environment``)."""
    return shared_plugin_environment()


@pytest.fixture(scope="session")
def plugin_zygote(plugin_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """omnigent's runner zygote in the plugin's environment, for this test process: the runner tests
    fork their harness processes from it, as a host's runner does (``zygote.py``; ~0.9 CPU-seconds
    less a harness process than an exec'd one). Each test still has its own harness process,
    simulator and socket. Its tests keep to one xdist worker (tests/parallel.py: a session fixture
    not in ``SHARED_ACROSS_WORKERS``), so one zygote serves them all; stopped by closing its control
    socket."""
    zygote = Zygote(plugin_python, tmp_path_factory.mktemp("omnigent-zygote"))
    try:
        yield zygote
    finally:
        zygote.close()


def without_bwrap(env: dict[str, str]) -> dict[str, str]:
    """``env`` with no ``bwrap`` (bubblewrap) reachable on its PATH."""
    dirs = [d for d in env.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "bwrap").exists()]
    return {**env, "PATH": os.pathsep.join(dirs)}


async def run_omnigent(
    python: Path, *args: str, home: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(python),
        "-m",
        "omnigent",
        *args,
        cwd=str(home),
        env=env or server_env(home),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        raise AssertionError(
            f"omnigent {args[0]} timed out: {out.decode(errors='replace')[-3000:]}"
        ) from None
    return proc.returncode or 0, out.decode(errors="replace")


@pytest.fixture(scope="session")
def plugin_server(plugin_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of one omnigent server (from the plugin's environment: it must know the harness id) for
    this test process, shared by the tests that need only a session of their own on it: each finds its
    session by id (``new_session``). Starting a server costs ~5.6 CPU-seconds (imports, a fresh
    database's migrations): one per test was ~10 of them a run. A session fixture, yet not a reason to
    put its tests on one xdist worker: each worker starts its own when it first needs it
    (tests/parallel.py, ``SHARED_ACROSS_WORKERS``)."""
    srv = OmnigentServer(tmp_path_factory.mktemp("omnigent-server"), venv=plugin_python.parent.parent)
    srv.start()
    try:
        yield srv.url
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def plugin_host(plugin_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One client home for ``plugin_server``'s tests: the host daemon the first ``omnigent run --server``
    starts there (with its runner zygote) hosts every later test's session too, as one machine's
    daemon hosts all its sessions -- each test still has its own session, agent spec, simulator and
    runner (:func:`stop_new_sessions` stops that runner after it). A daemon of its own cost each test
    ~4-5 CPU-seconds (measured: the daemon ~2.3, its zygote and the warm runner it forks ahead ~2.5).
    Its daemon is stopped, as ``omnigent host stop`` stops it, when the process's tests are done.
    Shared across workers as its server is (``SHARED_ACROSS_WORKERS``: each worker has its own).
    Its host has a name of its own (:func:`client_home`)."""
    home = tmp_path_factory.mktemp("omnigent-client")
    client_home(home, "tui:\n  theme: light\n")  # (the chat's: no first-run theme picker)
    try:
        yield home
    finally:
        asyncio.run(stop_host(plugin_server, home))


async def session_ids(http: httpx.AsyncClient) -> set[str]:
    """The ids of the server's (top-level) sessions."""
    rows = (await http.get("/v1/sessions", params={"limit": 1000})).json()["data"]
    return {row["id"] for row in rows}


async def new_session(http: httpx.AsyncClient, known: set[str], timeout: float = 180.0) -> str:
    """The id of the one session on the server that is not in ``known`` (the ids before a test started
    its own), once there is one; two new ones is an error (the server is shared: never "the first row")."""
    async with asyncio.timeout(timeout):
        while not (fresh := await session_ids(http) - known):
            await asyncio.sleep(0.2)
    [sid] = fresh
    return sid


def client_home(home: Path, config: str = "") -> Path:
    """``home`` made an omnigent client home whose host has a name of its own: omnigent's server keeps
    one host a name (``(owner, name)`` is unique in its hosts table: omnigent 0.19.1's
    server/managed_hosts.py), and every home here would be named after this machine, so a test's own
    daemon took the shared host's place and the shared daemon's sessions could no longer start ("did
    not come online within 30s": seen when test_server's own-host tests ran between tests on the
    shared host). ``config``: more of omnigent's config.yaml."""
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text(
        f"host:\n  name: agy-harness-tests-{uuid.uuid4().hex[:12]}\n{config}"
    )
    return home


async def stop_new_sessions(http: httpx.AsyncClient, known: set[str]) -> None:
    """Stop the sessions on the server that are not in ``known`` (a test's own, on the shared host):
    omnigent's ``stop_session`` event, which for a host-bound session has the host stop its runner
    (and the harness process the runner started) and answers once the host acknowledged it
    (omnigent 0.19.1: server/routes/sessions/routes_events.py, ``_stop_host_runner_intentionally``)."""
    for sid in sorted(await session_ids(http) - known):
        response = await http.post(f"/v1/sessions/{sid}/events", json={"type": "stop_session", "data": {}})
        assert response.status_code < 300, (sid, response.status_code, response.text[:500])


@pytest.fixture
async def server(plugin_server: str, plugin_host: Path) -> AsyncIterator[tuple[str, Path]]:
    """The shared server's URL and the shared client home (``plugin_host``); the sessions this test
    added there are stopped after it."""
    async with _new_sessions_stopped(plugin_server):
        yield plugin_server, plugin_host


@pytest.fixture(scope="module")
def own_host(plugin_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A client home of this module's own (not ``plugin_host``'s): the host daemon the first ``omnigent
    run --server`` starts there has that test's environment, which every test of the module using it
    gives it alike (test_server.py: a PATH without bwrap) -- a daemon, its zygote and its warm runner
    once a module (~4 CPU-seconds a daemon), as one machine's daemon hosts all its sessions. Stopped,
    as ``omnigent host stop`` stops it, after the module's tests."""
    home = client_home(tmp_path_factory.mktemp("omnigent-own-host"))
    try:
        yield home
    finally:
        asyncio.run(stop_host(plugin_server, home))  # the host daemon `omnigent run --server` left behind


@pytest.fixture
async def server_own_host(plugin_server: str, own_host: Path) -> AsyncIterator[tuple[str, Path]]:
    """The shared server's URL and the module's own client home (``own_host``); the sessions this test
    added there are stopped after it (each test has its own session, simulator and agent)."""
    async with _new_sessions_stopped(plugin_server):
        yield plugin_server, own_host


@contextlib.asynccontextmanager
async def _new_sessions_stopped(url: str) -> AsyncIterator[None]:
    """The sessions added on the server at ``url`` while inside are stopped when it ends."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        known = await session_ids(http)
        try:
            yield
        finally:
            await stop_new_sessions(http, known)


def agent_dir(tmp: Path, sim: Simulator, *, os_env: bool = False) -> Path:
    """The README's agent, pointed at ``sim``; ``os_env``: with its commented ``os_env`` line taken in."""
    spec = readme_spec()
    spec = re.sub(r"agy_port: \d+", f"agy_port: {sim.port}", spec)
    spec = spec.replace("# agy_cascade: <id>", f"agy_cascade: {sim.cascade_id}")
    if os_env:
        line = "# os_env: {type: caller_process, sandbox: {type: none}}"
        assert line in spec, spec
        spec = spec.replace(line, line[2:])
    where = tmp / "agy"
    where.mkdir()
    (where / "config.yaml").write_text(spec)
    return where
