"""The StepSource contract, held by every step source (stream, poll, transcript tail) and the tests'
fake (ScriptedSource): batches of the cascade asked for, named by the source; and through the whole
harness, the same scripted conversation commits the same events whichever source read it, deltas
only where the source can stream (tests/rpc/test_step_source_contract.py holds the RPC sources to the
simulator's own projection too)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from dependency_injector import providers

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.transcript import TranscriptWriter
from agy_harness.adapters.transcript.tail import TranscriptTailSource
from agy_harness.composition.root.container import AgyContainer, make_container
from agy_harness.core.steps import parse_step
from agy_harness.ports.events import Event
from agy_harness.ports.protocols import StepBatch, StepSource
from tests.fakes import RecordingSink, ScriptedSource
from tests.integration.helpers import FAST, signature

TURNS = ["Say hello in one short sentence.", "autorun `ls -la` then list the directory", "view README.md"]


def one_source(name: str, container: AgyContainer, root: Path) -> providers.Provider[StepSource]:
    """The container's own provider of that source (the transcript tail's root is the writer's)."""
    if name == "stream":
        return container.stream
    if name == "poll":
        return container.poll
    return providers.Singleton(TranscriptTailSource, root, poll_interval=0.05)


async def through(source_name: str, tmp_path: Path) -> list[Event]:
    async with Simulator(pace=0.05) as sim:
        writer = TranscriptWriter(tmp_path)
        writer.attach(sim)
        sink = RecordingSink()
        async with RpcClient(sim.base_url) as client:
            container = make_container(
                base_url=sim.base_url,
                cascade_id=sim.cascade_id,
                sink=sink,
                options=FAST,
                poll_interval=0.05,
                stream_idle_timeout=5.0,
            )
            container.client.override(providers.Object(client))
            # one source alone, whatever the version gate would pick; a fixed model for turns
            container.step_sources.override(providers.List(one_source(source_name, container, tmp_path)))
            container.model_resolver.override(providers.Object(lambda _c: _model()))
            container.turn_senders.override(providers.List(container.rpc_turns))
            container.directory.override(providers.Object(None))
            container.interrupter.override(providers.Object(None))
            harness = container.harness()
            assert [s.name for s in harness.sources] == [source_name]
            async with harness:
                for i, text in enumerate(TURNS, 1):
                    await harness.send(text)
                    await sink.wait_for(
                        lambda i=i: (
                            sum(1 for e in sink.events if e.type == "status" and e.status == "idle") == i
                        ),  # type: ignore[union-attr]
                        timeout=15,
                    )
        writer.close()
    return sink.events


async def _model() -> str:
    return "MODEL_PLACEHOLDER_M20"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return signature(asyncio.run(through("stream", tmp_path_factory.mktemp("ref"))))


@pytest.mark.parametrize("source", ["stream", "poll", "transcript"])
async def test_every_step_source_commits_the_same_events(
    source: str, reference: list[str], tmp_path: Path
) -> None:
    events = await through(source, tmp_path)
    assert signature(events) == reference
    deltas = [e for e in events if e.type == "text_delta"]
    if source == "stream":
        assert deltas
    if source == "transcript":  # completed steps only: it cannot stream
        assert not deltas


SOURCES = ["stream", "poll", "transcript", "scripted"]  # the last: the tests' fake, held to it too


@pytest.mark.parametrize("name", SOURCES)
async def test_a_step_source_yields_batches_of_the_asked_cascade_named_by_it(
    name: str, tmp_path: Path
) -> None:
    async with Simulator(pace=0) as sim:
        writer = TranscriptWriter(tmp_path)
        writer.attach(sim)
        await sim.submit_user_turn("Say hello in one short sentence.")
        await sim.wait_idle(10)
        async with RpcClient(sim.base_url) as client:
            source: StepSource = {
                "stream": lambda: RpcStreamSource(client, idle_timeout=5.0),
                "poll": lambda: RpcPollSource(client, interval=0.02),
                "transcript": lambda: TranscriptTailSource(tmp_path, poll_interval=0.02),
                "scripted": lambda: ScriptedSource("scripted", [[sim.steps()]]),
            }[name]()
            assert isinstance(source, StepSource) and isinstance(source.live, bool) and source.name
            seen: list[str] = []
            async with asyncio.timeout(10):
                async for batch in source.batches(sim.cascade_id):
                    assert isinstance(batch, StepBatch)
                    assert (batch.cascade_id, batch.source) == (sim.cascade_id, source.name)
                    seen += [s.type for s in map(parse_step, batch.steps) if s is not None]
                    if "USER_INPUT" in seen and "PLANNER_RESPONSE" in seen:
                        break
        writer.close()
