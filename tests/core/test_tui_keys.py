"""The keys typed into agy's pane after an RPC answer, and for "allow always" (the reference's
to_tui_selection_keys, live-verified on agy 1.2.7)."""

from __future__ import annotations

from agy_harness.core.reconciler import Reconciler
from agy_harness.core.tui_keys import dismiss_keys, persist_keys, persist_offered
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .fixtures import CASCADE, fixture


def gate(name: str) -> GateOpened:
    [g] = [e for e in Reconciler(CASCADE).feed(fixture(name)) if isinstance(e, GateOpened)]
    return g


def test_permission_keys() -> None:
    g = gate("run_command_waiting")
    assert persist_offered(g)
    assert dismiss_keys(g, GateAnswer(allow=True)) == ["1", "Enter"]
    assert dismiss_keys(g, GateAnswer(allow=False)) == ["4", "Enter"]
    assert dismiss_keys(g, GateAnswer(action="decline")) == ["4", "Enter"]
    assert persist_keys(g, GateAnswer(allow=True, persist="session")) == ["2", "Enter"]
    assert persist_keys(g, GateAnswer(allow=True, persist="always")) == ["3", "Enter"]
    assert persist_keys(g, GateAnswer(allow=False, persist="always")) is None
    assert persist_keys(g, GateAnswer(allow=True)) is None
    plain = g.model_copy(
        update={"permission": g.permission.model_copy(update={"suggested_persist_pattern": ""})}
    )  # type: ignore[union-attr]
    assert not persist_offered(plain)


def test_question_keys() -> None:
    g = gate("ask_question_waiting")
    first = g.questions[0].options[1]
    assert dismiss_keys(g, GateAnswer(selections=((first.id,),))) == [first.id, "Enter"]
    assert dismiss_keys(g, GateAnswer(action="decline")) == ["Escape"]
    assert dismiss_keys(g, GateAnswer(selections=((), ), write_ins=("my own answer",))) == ["Escape"]  # fmt: skip
