"""Findings 11, 13 (discovery ownership) and 14: bind only a live agy that owns the conversation;
the simulator leaves no TLS key on disk."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agy_harness.adapters.rpc.discovery import Candidate, Resolver, Verdict, probe
from agy_harness.adapters.rpc.errors import NoAgyFound
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import open_session
from tests.rpc.stub import Reply, Request, StubServer, const


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_dead_base_url_is_refused_not_opened() -> None:
    with pytest.raises(NoAgyFound, match="no agy answers"):
        async with open_session(base_url=f"https://127.0.0.1:{dead_port()}", cascade_id="c"):
            raise AssertionError("opened a session on a dead port")  # it used to, claiming stream=yes


async def test_a_base_url_serving_another_conversation_is_refused(sim: Simulator) -> None:
    with pytest.raises(NoAgyFound, match="does not host conversation"):
        async with open_session(base_url=sim.base_url, cascade_id="00000000-not-this-agy"):
            raise AssertionError("bound an agy that does not own the conversation")
    async with open_session(base_url=sim.base_url, cascade_id=sim.cascade_id) as s:  # the owner binds
        assert s.cascade_id == sim.cascade_id


@pytest.fixture
async def lenient_agy() -> AsyncIterator[StubServer]:
    """An agy that answers 2xx to GetConversationMetadata for any id, without owning it."""

    async def metadata(req: Request) -> Reply:
        cid = json.loads(req.body)["conversationId"]
        body = {"metadata": {"rootConversationId": "someone-else"}} if cid == "other" else {}
        return Reply(200, json.dumps(body).encode())

    server = StubServer({"Heartbeat": const(200, b"{}"), "GetConversationMetadata": metadata})
    async with server.running():
        yield server


async def test_discovery_requires_the_metadata_to_echo_the_id(lenient_agy: StubServer) -> None:
    for cascade in ("mine", "other"):
        assert await probe(Candidate(lenient_agy.port), cascade) is Verdict.FOREIGN  # was OURS

    class OnePort:
        def processes(self, **_kw: object) -> list[object]:
            from agy_harness.adapters.rpc.discovery import AgyProcess

            return [AgyProcess(1, "agy", ("agy",))]

        def listen_ports(self, pid: int) -> set[int]:
            return {lenient_agy.port}

    with pytest.raises(NoAgyFound):
        await Resolver("mine", scanner=OnePort()).resolve()  # type: ignore[arg-type]


def test_a_killed_simulator_leaves_no_tls_key_behind(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agy_harness.adapters.simulator"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # serving: its TLS context is loaded
            if proc.stdout.readline().startswith("cascade "):
                break
        else:
            raise AssertionError("the simulator never started")
        assert [p.name for p in tmp_path.rglob("*")] == []  # no key on disk while it runs
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert [p.name for p in tmp_path.rglob("*")] == []  # and none left by the kill
