"""The ShowsModelNames contract, held by every sink that shows agy's model display names: the omnigent
sink (omnigent's stored model-change and usage bodies), the terminal (its screen) and the demo's tap
over the terminal. Bound to agy's catalog (the RPC adapter on the simulator), a model change and a
usage show the model's display name; a model the catalog did not list when first asked is looked up
again, once; without a catalog, or when it fails, the id is shown and the stream goes on.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from rich.console import Console

from agy_harness.adapters.rpc.actions import RpcModelCatalog
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.composition.entrypoints.demo import TapSink
from agy_harness.ports.events import Event, ModelChanged, Usage
from agy_harness.ports.protocols import ShowsModelNames
from tests.sinks.omnigent_app import OmnigentApp

from .conftest import Agy

C = "cascade-1"
PRO, FLASH = "MODEL_PLACEHOLDER_M20", "MODEL_PLACEHOLDER_M71"  # the simulator's catalog
PRO_NAME, FLASH_NAME = "Gemini 3 Pro", "Gemini 3 Flash"


def change(n: int, model: str) -> ModelChanged:
    return ModelChanged(id=f"t/u:{n}/model", cascade_id=C, step_key=f"t/u:{n}", model=model)


def usage(n: int, model: str) -> Usage:  # (growing totals: omnigent is posted a usage that grows)
    return Usage(
        id=f"t/{n}/usage",
        cascade_id=C,
        step_key=f"t/{n}",
        cumulative_input_tokens=n * 100,
        cumulative_output_tokens=n,
        cumulative_cache_read_input_tokens=0,
        model=model,
    )


class Shown:
    """One sink and the model names its consumer shows, in order (model changes, then usages)."""

    def __init__(self, sink: Any, changes: Callable[[], list[str]], usages: Callable[[], list[str]]) -> None:
        self.sink, self.changes, self.usages = sink, changes, usages


@contextlib.asynccontextmanager
async def omnigent() -> AsyncIterator[Shown]:
    app = OmnigentApp()
    async with app.serving():
        sink = OmnigentSink(app.base_url, app.session_id, retry=RetryPolicy(initial=0.01, deadline=3))

        def shown(kind: str) -> list[str]:
            return [b["data"]["model"] for b in app.received if b["type"] == kind]

        try:
            yield Shown(sink, lambda: shown("external_model_change"), lambda: shown("external_session_usage"))
        finally:
            await sink.aclose()


def _screen(tap: bool) -> Shown:
    console = Console(record=True, width=120, file=io.StringIO())
    terminal = TerminalSink(console, status_line=False)  # a usage is a line of its own

    def lines(mark: str) -> list[str]:
        out = console.export_text(clear=False).splitlines()
        return [line.split(mark, 1)[1].strip() for line in out if mark in line]

    return Shown(TapSink(terminal) if tap else terminal, lambda: lines("model →"), lambda: lines("cache 0 ·"))


@contextlib.asynccontextmanager
async def terminal() -> AsyncIterator[Shown]:
    yield _screen(tap=False)


@contextlib.asynccontextmanager
async def demo_tap() -> AsyncIterator[Shown]:
    yield _screen(tap=True)


SINKS = {"omnigent": omnigent, "terminal": terminal, "demo tap": demo_tap}


async def deliver(shown: Shown, events: list[Event]) -> None:
    assert await shown.sink.deliver(events) == len(events)


@pytest.mark.parametrize("kind", SINKS)
async def test_bound_to_agys_catalog_a_sink_shows_display_names(kind: str, agy: Agy) -> None:
    async with SINKS[kind]() as shown:
        assert isinstance(shown.sink, ShowsModelNames)
        shown.sink.bind_model_catalog(RpcModelCatalog(agy.client))
        await deliver(shown, [change(1, PRO), usage(2, PRO)])
        await deliver(shown, [change(3, FLASH), usage(4, FLASH), usage(5, "MODEL_NOBODY_LISTS")])
        assert shown.changes() == [PRO_NAME, FLASH_NAME]
        assert shown.usages() == [PRO_NAME, FLASH_NAME, "MODEL_NOBODY_LISTS"]


@pytest.mark.parametrize("kind", SINKS)
async def test_a_model_agy_adds_later_is_looked_up_once_and_a_failing_catalog_shows_ids(
    kind: str, agy: Agy
) -> None:
    sim, flash = agy.sim, agy.sim.models.pop(FLASH)  # agy lists Flash only after an update
    asked = lambda: sim.calls.count("GetAvailableModels")  # noqa: E731
    async with SINKS[kind]() as shown:
        shown.sink.bind_model_catalog(RpcModelCatalog(agy.client))
        await deliver(shown, [change(1, PRO), usage(2, PRO)])
        assert asked() == 1  # asked once for what it listed
        sim.models[FLASH] = flash
        await deliver(shown, [change(3, FLASH), usage(4, FLASH)])
        assert asked() == 2  # asked again for the model it had not listed, once
        sim.faults.fail("GetAvailableModels", status=503, times=5)
        await deliver(shown, [change(5, "MODEL_NEW"), usage(6, "MODEL_NEW")])  # the stream goes on
        assert shown.changes() == [PRO_NAME, FLASH_NAME, "MODEL_NEW"]
        assert shown.usages() == [PRO_NAME, FLASH_NAME, "MODEL_NEW"]


@pytest.mark.parametrize("kind", SINKS)
async def test_unbound_a_sink_shows_model_ids(kind: str) -> None:
    async with SINKS[kind]() as shown:
        await deliver(shown, [change(1, PRO), usage(2, PRO)])
        assert shown.changes() == [PRO] and shown.usages() == [PRO]
