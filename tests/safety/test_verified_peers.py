"""Issue #20, case 2: discovery binds only the user's own agy. Another user's process named agy, whose
``--log-file`` names its port and which echoes any conversation id, used to be bound: it got the
user's csrf token, turns and answers. Now it is never even sent a Heartbeat."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.discovery import Resolver
from agy_harness.adapters.rpc.errors import NoAgyFound, RpcUnreachable
from agy_harness.composition.root.session import open_session

from .other_user import received, run_hostile, shared_dir

SECRET = "victim-csrf-secret"


@pytest.fixture
def hostile_agy() -> Iterator[tuple[int, Path]]:
    """The hostile agy, naming its port in its --log-file: its port and the file of what it received."""
    with shared_dir() as here, run_hostile(here, "--log-file", str(here / "agy.log")) as port:
        yield port, here / "got.jsonl"


@pytest.fixture
def own_agy() -> Iterator[tuple[int, str]]:
    """The user's own agy (the simulator, in a process of its own): its port and conversation."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agy_harness.adapters.simulator"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = cascade = None
        deadline = time.monotonic() + 30
        while (port is None or cascade is None) and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("port "):
                port = int(line.split()[1])
            elif line.startswith("cascade "):
                cascade = line.split()[1]
        assert port is not None and cascade is not None
        yield port, cascade
    finally:
        proc.kill()
        proc.wait(10)


async def test_another_users_agy_is_never_bound_nor_sent_the_token(
    hostile_agy: tuple[int, Path], own_agy: tuple[int, str]
) -> None:
    hostile_port, got = hostile_agy
    port, cascade = own_agy
    async with open_session(cascade_id=cascade, csrf_token=SECRET) as session:
        assert session.base_url.endswith(f":{port}")  # the user's own agy
        assert session.base_url != f"https://127.0.0.1:{hostile_port}"
    assert received(got) == []  # not a byte: no Heartbeat, no token, no turn


async def test_a_port_of_another_user_is_refused_even_when_named(hostile_agy: tuple[int, Path]) -> None:
    hostile_port, got = hostile_agy
    with pytest.raises(NoAgyFound, match="not by you"):
        async with open_session(port=hostile_port, cascade_id="any-conversation", csrf_token=SECRET):
            raise AssertionError("bound another user's port")
    with pytest.raises(NoAgyFound, match="not by you"):
        async with open_session(base_url=f"https://127.0.0.1:{hostile_port}", csrf_token=SECRET):
            raise AssertionError("bound another user's port")
    with pytest.raises(NoAgyFound):
        await Resolver("any-conversation", csrf_token=SECRET).resolve()  # the scan does not see it
    assert received(got) == []


async def test_a_port_another_user_takes_over_after_agy_died_gets_nothing() -> None:
    """A bound client keeps its port; when agy dies and another user's process listens there, no new
    connection is made to it (every new connection checks whose socket listens)."""
    with contextlib.ExitStack() as stack:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agy_harness.adapters.simulator"], stdout=subprocess.PIPE, text=True
        )
        stack.callback(proc.wait, 10)
        stack.callback(proc.kill)
        assert proc.stdout is not None
        port = next(int(line.split()[1]) for line in proc.stdout if line.startswith("port "))
        async with RpcClient(f"https://127.0.0.1:{port}", csrf_token=SECRET) as client:
            assert await client.call("Heartbeat", {}) == {}
            proc.kill()
            proc.wait(10)
            for _ in range(2):  # agy is gone: the pooled connection fails, then nothing listens
                with pytest.raises(RpcUnreachable):
                    await client.call("Heartbeat", {})
            here = stack.enter_context(shared_dir())
            assert stack.enter_context(run_hostile(here, str(port))) == port  # the same port, another uid
            for _ in range(3):
                with pytest.raises(RpcUnreachable):
                    await client.call("GetCascadeTrajectorySteps", {"cascadeId": "c"})
        assert received(here / "got.jsonl") == []


@pytest.mark.parametrize("elsewhere", ["127.0.0.2", "::1"])
async def test_another_user_on_the_same_port_at_another_loopback_address_changes_nothing(
    own_agy: tuple[int, str], elsewhere: str
) -> None:
    """Issue #35 case 6: another user listening on 127.0.0.2:PORT or [::1]:PORT, the user's own agy on
    127.0.0.1:PORT, made the harness refuse the user's agy (the check looked at every loopback socket
    with that port number); only the socket the connection reaches counts."""
    port, cascade = own_agy
    with shared_dir() as here, run_hostile(here, str(port), "--bind", elsewhere) as taken:
        assert taken == port  # the same port number, another address, another uid
        async with open_session(port=port, cascade_id=cascade, csrf_token=SECRET) as session:
            assert session.base_url == f"https://127.0.0.1:{port}"
            await session.harness.snapshot.read_steps(cascade)  # it serves
        async with open_session(base_url=f"https://127.0.0.1:{port}", cascade_id=cascade, csrf_token=SECRET):
            pass
        host = f"[{elsewhere}]" if ":" in elsewhere else elsewhere
        with pytest.raises(NoAgyFound, match="not by you"):  # the other user's socket is still refused
            async with open_session(base_url=f"https://{host}:{port}", csrf_token=SECRET):
                raise AssertionError("bound another user's port")
        assert received(here / "got.jsonl") == []


async def test_a_connection_accepted_by_another_users_socket_is_dropped_before_a_byte(
    hostile_agy: tuple[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listener check runs before dialling; if another user's socket takes the connection anyway
    (here: that check is made to pass), the accepted connection's other end is checked once connected
    and the request -- the csrf token -- never goes out."""
    from agy_harness.adapters.rpc import connections

    hostile_port, got = hostile_agy
    monkeypatch.setattr(connections, "listener_problem", lambda *_: None)
    async with RpcClient(f"https://127.0.0.1:{hostile_port}", csrf_token=SECRET) as client:
        with pytest.raises(RpcUnreachable, match="accepted by uid"):
            await client.call("Heartbeat", {})
    assert received(got) == []
