"""Start/stop leave nothing running; profiles; the CLI and ``--version``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading

import httpx
import pytest

from agy_harness.adapters.simulator import PROFILES, Simulator
from agy_harness.adapters.simulator.cli import main

from .helpers import call, client, ok, stream


async def test_start_stop_leaves_no_tasks_threads_or_listeners() -> None:
    before_tasks = asyncio.all_tasks()
    before_threads = threading.active_count()
    sim = Simulator()
    await sim.start()
    port, plain = sim.port, sim.plain_port
    async with client() as c:
        await ok(c, sim, "Heartbeat")
        await sim.submit_user_turn("run: pwd")  # parked on a gate while we stop
        await sim.wait_idle()
        async with stream(c, sim) as s:
            await s.next_frame()
            await sim.stop()
            await s.drain()
    assert s.trailer() == {}
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == before_tasks
    assert threading.active_count() == before_threads
    for p in (port, plain):
        with pytest.raises(httpx.ConnectError):
            async with httpx.AsyncClient(verify=False) as fresh:
                await fresh.post(f"http://127.0.0.1:{p}/", json={})


async def test_stop_with_an_idle_keepalive_connection_open() -> None:
    before = asyncio.all_tasks()
    async with client() as c:
        sim = await Simulator().start()
        await ok(c, sim, "Heartbeat")
        await sim.stop()  # the client still holds its HTTP/2 connection
    assert asyncio.all_tasks() == before


async def test_listens_on_loopback_only(sim: Simulator) -> None:
    assert sim.port > 0 and sim.plain_port > 0 and sim.port != sim.plain_port
    assert sim.base_url.startswith("https://127.0.0.1:")


async def test_old_profile_lacks_turn_send_and_stream() -> None:
    async with Simulator(profile="1.0.4") as sim, client() as c:
        assert sim.version == "1.0.4"
        resp = await call(
            c, sim, "SendUserCascadeMessage", {"cascadeId": sim.cascade_id, "items": [{"text": "hi"}]}
        )
        assert resp.status_code == 404
        async with stream(c, sim) as s:
            await s.drain()
        assert s.resp.status_code == 404
        # everything else is there
        await ok(c, sim, "Heartbeat")
        await ok(c, sim, "GetCascadeTrajectorySteps", {"cascadeId": sim.cascade_id})
        await sim.submit_user_turn("hello")  # the TUI path still works
        await sim.wait_idle()
        assert len(sim.steps()) == 4


async def test_full_profile_version(sim: Simulator) -> None:
    assert sim.version == "1.0.10"
    assert set(PROFILES) >= {"1.0.10", "1.0.4"}
    with pytest.raises(ValueError):
        Simulator(profile="9.9.9")


def test_version_output_starts_with_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "1.0.10"
    out = subprocess.run(
        [sys.executable, "-m", "agy_harness.adapters.simulator", "--version", "--profile", "1.0.4"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert out.splitlines()[0] == "1.0.4"


async def test_cli_runs_until_interrupted() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agy_harness.adapters.simulator",
        "--scenario",
        "hello",
        "--pace",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        lines: dict[str, str] = {}
        async with asyncio.timeout(20):
            while "cascade" not in lines:
                line = (await proc.stdout.readline()).decode()  # type: ignore[union-attr]
                assert line, "the CLI exited early"
                key, _, value = line.strip().partition(" ")
                lines[key] = value
        assert lines["agy"] == "simulator 1.0.10"
        port, cascade = int(lines["port"]), lines["cascade"]
        async with httpx.AsyncClient(http2=True, verify=False) as c:
            url = f"https://127.0.0.1:{port}/exa.language_server_pb.LanguageServerService/GetCascadeTrajectorySteps"
            async with asyncio.timeout(10):
                while True:
                    resp = await c.post(
                        url, json={"cascadeId": cascade}, headers={"Content-Type": "application/json"}
                    )
                    assert resp.status_code == 200 and resp.http_version == "HTTP/2"
                    if len(resp.json()["steps"]) == 4:
                        break
                    await asyncio.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(10):
            assert await proc.wait() == 130  # Ctrl-C: 128 + SIGINT, as the README says
    finally:
        if proc.returncode is None:
            os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()


def test_the_simulator_loads_only_its_server() -> None:
    """``agy-harness sim`` and the simulated TUI start some 100 times in the suite (and once per editor
    session on the simulator): they load their HTTP server and TLS, not the harness's RPC client, its
    models or the process table (psutil came in through the agy log lines the simulator writes)."""
    code = (
        "import sys; import agy_harness.adapters.simulator.simulator, agy_harness.adapters.simulator.tui, "
        "agy_harness.adapters.simulator.cli; print(' '.join(sys.modules))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert "hypercorn" in loaded  # (what it does load)
    unused = {"psutil", "aiohttp", "pydantic", "dependency_injector", "rich", "agy_harness.composition"}
    assert not unused & loaded, unused & loaded
