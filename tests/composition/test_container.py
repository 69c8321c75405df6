"""The composition root: the version gate is one provider, and overriding it (or anything else)
changes what a session runs on; the real binding against the simulator."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from dependency_injector import providers

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.cursor_file import MemoryCursorStore
from agy_harness.composition.root.container import AgyContainer, bind, make_container
from agy_harness.composition.root.session import QueueSink, session_from
from agy_harness.composition.root.version_gate import AdapterChoice, Capabilities
from tests.fakes import MemoryClaims, RecordingSink
from tests.integration.helpers import FAST, run_turn


def offline(caps: Capabilities, **kw: object) -> AgyContainer:
    """A container whose binding is given: nothing is probed or opened."""
    container = make_container(base_url="https://127.0.0.1:9", cascade_id="c1", **kw)  # type: ignore[arg-type]
    container.capabilities.override(providers.Object(caps))
    return container


@pytest.mark.parametrize(
    ("stream", "rpc_turns", "transcript", "tmux", "read", "turns"),
    [
        (True, True, False, False, ["stream", "poll"], ["rpc"]),
        (True, True, True, True, ["stream", "poll", "transcript"], ["rpc", "tmux"]),
        (False, False, False, True, ["poll"], ["tmux"]),
        (False, True, True, False, ["poll", "transcript"], ["rpc"]),
        (False, False, False, False, ["poll"], []),
    ],
)
async def test_the_version_gate_is_one_provider_and_its_choice_follows_the_capabilities(
    tmp_path: Path,
    stream: bool,
    rpc_turns: bool,
    transcript: bool,
    tmux: bool,
    read: list[str],
    turns: list[str],
) -> None:
    caps = Capabilities(
        (1, 0, 10), stream=stream, rpc_turns=rpc_turns, transcript_root=tmp_path if transcript else None
    )
    container = offline(caps, tmux_target="%1" if tmux else None)
    choice = container.version_gate()
    assert choice == AdapterChoice("_".join(read), "_".join(turns) or "none")
    assert [s.name for s in container.step_sources()] == read
    assert [t.name for t in container.turn_senders()] == turns
    harness = container.harness()
    assert [s.name for s in harness.sources] == read and [t.name for t in harness.turn_senders] == turns
    assert harness.snapshot is container.poll() and harness.cascade_id == "c1"
    # sub-agents too are the version gate's: streamed when this agy streams, else polled
    subagent_source = harness.watcher.subagents.source
    assert (subagent_source().name if subagent_source else "poll") == ("stream" if stream else "poll")
    await container.client().aclose()


async def test_every_part_of_the_harness_is_built_by_the_container_none_wired_in_after() -> None:
    """The claims, the clock and the bus are providers: a test or an entry point overrides them."""
    container = offline(Capabilities((1, 0, 10), stream=True, rpc_turns=True))
    claims = MemoryClaims()
    container.claims.override(providers.Object(claims))
    harness = container.harness()
    assert harness.claims is claims and harness.watcher.clear.claims is claims
    assert harness.clock is container.clock() and harness.watcher.clock is harness.clock
    assert harness.bus is container.bus() and harness.emitter.bus is harness.bus
    assert harness.conversation is container.conversation()
    await container.client().aclose()


async def test_overriding_the_version_gate_itself_replaces_the_choice() -> None:
    container = offline(Capabilities((1, 0, 10), stream=True, rpc_turns=True))
    container.version_gate.override(providers.Object(AdapterChoice("poll", "none")))
    harness = container.harness()
    assert [s.name for s in harness.sources] == ["poll"] and harness.turn_senders == []
    await container.client().aclose()


async def test_the_stream_knows_whether_the_bound_turn_runs() -> None:
    container = offline(Capabilities((1, 0, 10), stream=True, rpc_turns=True))
    harness = container.harness()
    producing = container.stream()._is_running  # the stream's idle watchdog asks this
    assert not producing()
    harness.reconciler.state.status = "running"
    assert producing()
    harness.reconciler.state.gates["t/7"] = "t/7/gate"
    assert not producing()  # a gate waits on the human: agy is quiet, not stalled
    await container.client().aclose()


async def test_a_session_on_forced_capabilities_runs_on_what_the_gate_picked_for_them() -> None:
    async with Simulator(profile="1.0.10", pace=0) as sim:
        sink = RecordingSink()
        container = make_container(
            port=sim.port, cascade_id=sim.cascade_id, sink=sink, options=FAST, poll_interval=0.05
        )
        # this agy has the stream and RPC turn-send; force what an older one offers
        container.capabilities.override(
            providers.Object(Capabilities((1, 0, 4), stream=False, rpc_turns=True))
        )
        async with session_from(container) as session:
            assert session.capabilities.version == (1, 0, 4)
            assert [s.name for s in session.harness.sources] == ["poll"]
            await run_turn(session, sink, "Say hello in one short sentence.")
            assert set(session.harness.stats.batches) <= {"poll", "backstop"}
        assert any(e.type == "assistant_message" for e in sink.events)


async def test_binding_finds_the_conversation_and_probes_the_capabilities() -> None:
    async with Simulator(profile="1.0.4", pace=0) as sim:
        container = make_container(port=sim.port, version_text=sim.version)
        discovered = await bind(container)
        try:
            assert discovered  # a port alone is verified by discovery
            assert container.config.cascade_id() == sim.cascade_id  # the most recent conversation
            caps = container.capabilities()
            assert (caps.version, caps.stream, caps.rpc_turns) == ((1, 0, 4), False, False)
            assert container.version_gate() == AdapterChoice("poll", "none")
        finally:
            await container.client().aclose()


async def test_a_client_you_give_is_yours_and_so_are_the_cursor_store_and_sink() -> None:
    cursors = MemoryCursorStore()
    async with Simulator(profile="1.0.10", pace=0) as sim, RpcClient(sim.base_url) as shared:
        container = make_container(
            base_url=sim.base_url, cascade_id=sim.cascade_id, cursor_store=cursors, options=FAST
        )
        container.client.override(providers.Object(shared))
        async with session_from(container) as session:
            assert session.base_url == shared.base_url and isinstance(session.sink, QueueSink)
            assert session.harness.cursor_store is cursors
            await session.send("Say hello in one short sentence.")
            async for event in session.events():
                if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                    break
        assert cursors.saves > 0
        assert await shared.call("Heartbeat", {}) is not None  # still open: not closed for us


def test_replay_builds_its_reconciler_from_the_container() -> None:
    reconciler = AgyContainer().reconciler("c9")
    assert reconciler.cascade_id == "c9"


def test_the_readme_entry_point_example_runs(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page[page.index("## The composition root") : page.index("## The harness and its roles")]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    script = tmp_path / "entry_point.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "sources: ['poll']"
    assert lines[1].startswith("agy: ") and len(lines[1]) > len("agy: ")
