from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator
from tests.real_omnigent import OmnigentServer, server_env

from .host import stop_host
from .test_registry import readme_spec
from .venv import shared_plugin_environment


@pytest.fixture(scope="session")
def plugin_python() -> Path:
    """Python of omnigent's environment with this checkout's agy-harness (and its plugin) installed:
    cached by what it is made of, one for every xdist worker of a run and for the runs after while the
    checkout's wheel inputs are unchanged (``venv.shared_plugin_environment``)."""
    return shared_plugin_environment()


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
    this test process, shared by the tests that need only a session of their own on it: each has its
    own client home (its own host daemon and host id) and finds its session by id (``new_session``).
    Starting a server costs ~5.6 CPU-seconds (imports, a fresh database's migrations): one per test was
    ~10 of them a run. A session fixture, yet not a reason to put its tests on one xdist worker: each
    worker starts its own when it first needs it (tests/parallel.py, ``SHARED_ACROSS_WORKERS``)."""
    srv = OmnigentServer(tmp_path_factory.mktemp("omnigent-server"), venv=plugin_python.parent.parent)
    srv.start()
    try:
        yield srv.url
    finally:
        srv.stop()


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


@pytest.fixture
async def server(plugin_python: Path, plugin_server: str, tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """The shared server's URL and a client home of this test's own (its host daemon stopped after)."""
    client_home = tmp_path / "client"
    client_home.mkdir()
    try:
        yield plugin_server, client_home
    finally:
        await stop_host(plugin_server, client_home)  # the host daemon `omnigent run --server` left behind


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
