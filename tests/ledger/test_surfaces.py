"""Each front end names the surface its human decides on, which the decision ledger records (the
bridge reads a sink's ``surface``; the board passes its own to ``Session.answer``)."""

from __future__ import annotations

import inspect

from agy_harness.adapters.sinks.omnigent.sink import OmnigentSink
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.composition.entrypoints.acp.sessions import AcpSink
from agy_harness.composition.entrypoints.board import live
from agy_harness.composition.entrypoints.demo import TapSink
from agy_harness.composition.entrypoints.omnigent_plugin.sink import PluginSink


def test_every_front_end_names_its_surface() -> None:
    assert [s.surface for s in (AcpSink, TerminalSink, TapSink, OmnigentSink, PluginSink)] == [
        "acp", "attach", "demo", "omnigent", "omnigent"
    ]  # fmt: skip
    assert 'answer(gate_id, value, surface="board")' in inspect.getsource(live)
