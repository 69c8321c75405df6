"""The checks of whose socket a connection reaches (before dialling: the listener; once connected: the
peer) ask the kernel with a blocking call (sock_diag netlink, a 2 s timeout; else /proc/net/tcp read
whole). They ran on the event loop, once per new connection: every session of the process stood still
while the kernel answered. Now they run in a thread: while a check is slow, the loop keeps serving --
and a check that cannot tell still refuses the connection (fail closed)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.rpc import listeners
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.errors import RpcUnreachable
from agy_harness.adapters.simulator import Simulator

STARVED = 20.0  # how long a slow check waits for the loop before it says the loop stood still


def slow(real: Callable[..., Any], loop: asyncio.AbstractEventLoop, starved: list[str]) -> Callable[..., Any]:
    """``real``, which first waits until the event loop has run a callback it was handed: it can run
    only if the check does not hold the loop."""

    def check(*args: Any) -> Any:
        served = threading.Event()
        loop.call_soon_threadsafe(served.set)
        if not served.wait(STARVED):
            starved.append(real.__name__)
        return real(*args)

    return check


async def test_the_loop_keeps_serving_while_the_peer_checks_are_slow(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop, starved = asyncio.get_running_loop(), []  # type: ignore[var-annotated]
    monkeypatch.setattr(listeners, "diag_listeners", slow(listeners.diag_listeners, loop, starved))
    monkeypatch.setattr(listeners, "_diag_one", slow(listeners._diag_one, loop, starved))
    async with RpcClient(sim.base_url) as client:
        await client.call("Heartbeat", {})
    assert starved == []  # neither check held the loop
    assert "Heartbeat" in sim.calls  # and both passed: the user's own agy


async def test_a_peer_that_cannot_be_told_is_still_refused(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listeners, "_diag_one", lambda *_: None)  # the kernel cannot say
    monkeypatch.setattr(listeners, "_proc_one", lambda *_: None)
    async with RpcClient(sim.base_url) as client:
        with pytest.raises(RpcUnreachable, match="cannot tell whose socket accepted"):
            await client.call("Heartbeat", {})
    assert "Heartbeat" not in sim.calls


def test_a_proc_table_over_the_bound_is_not_read_and_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc/net/tcp is read at most PROC_READ bytes: past that the peer cannot be told (refused), and
    the listener tables are not taken as whole."""
    net = tmp_path / "net"
    net.mkdir()
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    row = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345\n"
    monkeypatch.setattr(listeners, "PROC_READ", len(header) + len(row))
    (net / "tcp").write_text(header + row)
    (net / "tcp6").write_text(header)
    assert listeners._proc_one(("127.0.0.1", 8080), ("0.0.0.0", 0), tmp_path) == 1000  # at the bound: read
    assert listeners.listener_uids(8080, tmp_path) == {1000}
    (net / "tcp").write_text(header + row + row.replace("12345", "12346"))  # one row over
    assert listeners._proc_one(("127.0.0.1", 8080), ("0.0.0.0", 0), tmp_path) is None
    with pytest.raises(listeners.TablesTooLarge):
        listeners.listener_uids(8080, tmp_path)
