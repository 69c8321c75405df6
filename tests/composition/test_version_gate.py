"""The version gate's parsing and probing (probing against the simulator's two profiles)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.version_gate import detect_capabilities, method_exists, parse_version


def test_the_first_x_y_z_is_the_version() -> None:
    assert parse_version("1.0.10\nbuild 4f2a 2026-06-20 (go1.24.3 9.1.2)") == (1, 0, 10)
    assert parse_version("agy version 2.3.4-rc1") == (2, 3, 4)
    assert parse_version("no version here") is None
    out = subprocess.run(
        [sys.executable, "-m", "agy_harness.adapters.simulator", "--version", "--profile", "1.0.4"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert parse_version(out) == (1, 0, 4)


async def test_probing_tells_the_profiles_apart() -> None:
    for profile, expected in (("1.0.10", (True, True)), ("1.0.4", (False, False))):
        async with Simulator(profile=profile) as sim, RpcClient(sim.base_url) as client:
            caps = await detect_capabilities(client, sim.cascade_id, version_text=sim.version)
            assert (caps.stream, caps.rpc_turns) == expected, profile
            assert caps.version == parse_version(profile)
            assert await method_exists(client, "GetCascadeTrajectorySteps")
            assert not await method_exists(client, "NoSuchMethod")
            # the probe sent no turn: the empty request names no cascade
            assert not [s for s in sim.steps() if s["type"] == "CORTEX_STEP_TYPE_USER_INPUT"]


async def test_the_transcript_is_found_under_either_of_agys_data_roots(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without a transcript_root, agy's own data roots are looked in (~/.gemini/antigravity-cli, then
    ~/.gemini/antigravity), for either transcript file of this conversation."""
    from agy_harness.adapters.transcript import locate

    first, second = tmp_path / "antigravity-cli", tmp_path / "antigravity"
    monkeypatch.setattr(locate, "DEFAULT_ROOTS", (first, second))
    async with Simulator() as sim, RpcClient(sim.base_url) as client:
        assert (await detect_capabilities(client, sim.cascade_id)).transcript_root is None
        logs = locate.logs_dir(second, sim.cascade_id)
        logs.mkdir(parents=True)
        (logs / "transcript.jsonl").write_text("")
        assert (await detect_capabilities(client, sim.cascade_id)).transcript_root == second


async def test_the_stream_probe_never_waits_for_the_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first envelope of StreamAgentStateUpdates is the whole conversation's replay (megabytes
    at 10k steps): the probe learns the stream exists from its header and closes, without reading
    or decoding it. Here the replay's payload never comes: the old probe waited for it until its
    own deadline; the header is enough. An error trailer still says what it says. The probe's
    deadline is stretched to 10 minutes, so the test's own bound (60 s) is generous on a loaded
    machine and still tells a header-only read from a wait for the payload."""
    import asyncio
    import struct
    from collections.abc import AsyncIterator

    from agy_harness.composition.root.version_gate import stream_exists
    from tests.rpc.stub import Reply, Request, StubServer

    released = asyncio.Event()

    async def replay_that_never_arrives(_req: Request) -> Reply:
        async def body() -> AsyncIterator[bytes]:
            yield struct.pack(">BI", 0, 50_000_000) + b'{"update": {"mainTrajectoryUpdate":'
            await released.wait()

        return Reply(200, body(), "application/connect+json")

    async def missing(_req: Request) -> Reply:
        trailer = b'{"error": {"code": "unimplemented", "message": "no such method"}}'
        return Reply(200, struct.pack(">BI", 2, len(trailer)) + trailer, "application/connect+json")

    monkeypatch.setattr(RpcClient.stream_opens, "__kwdefaults__", {"timeout": 600.0})
    stub = StubServer(routes={"StreamAgentStateUpdates": replay_that_never_arrives})
    async with stub.running(), RpcClient(stub.base_url) as client:
        try:
            async with asyncio.timeout(60):  # well before the probe's own (stretched) deadline
                assert await stream_exists(client, "c")
        finally:
            released.set()
    stub = StubServer(routes={"StreamAgentStateUpdates": missing})
    async with stub.running(), RpcClient(stub.base_url) as client:
        assert not await stream_exists(client, "c")


async def test_an_attach_makes_agy_replay_the_conversation_once() -> None:
    """The stream's first frame is the whole conversation: agy builds it for every stream opened on
    it. The version gate's probe names no conversation, so an attach through the public API opens
    exactly one stream on the bound conversation (the reader's); the probe used to open a second one
    (agy built a 10,000-step replay for it, then the probe closed it)."""
    from collections import Counter

    from agy_harness.adapters.sinks.queue import QueueSink
    from agy_harness.composition.root.session import open_session

    async with Simulator(profile="1.0.10") as sim:
        cid = sim.cascade_id
        await sim.submit_user_turn("Say hello in one short sentence.")
        await sim.wait_idle(timeout=30)
        opened: Counter[str] = Counter()
        watch = sim._watch

        def counted(cascade):  # type: ignore[no-untyped-def]
            opened[cascade.id] += 1
            return watch(cascade)

        sim._watch = counted  # type: ignore[method-assign]
        sink = QueueSink()
        async with open_session(base_url=sim.base_url, cascade_id=cid, sink=sink) as session:
            assert session.capabilities.stream
            while (await sink.queue.get()).type != "assistant_message":  # the replay was read
                pass
        assert opened == Counter({cid: 1})
