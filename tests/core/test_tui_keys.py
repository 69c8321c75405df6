"""The keys that answer agy's own prompt, and "allow always" (the reference's to_tui_selection_keys,
live-verified on agy 1.2.7). An answer the menu cannot express has no keys: it goes over RPC only."""

from __future__ import annotations

from agy_harness.core.reconciler import Reconciler
from agy_harness.core.tui_keys import answer_keys, persist_keys, persist_offered
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer

from .fixtures import CASCADE, fixture


def gate(name: str) -> GateOpened:
    [g] = [e for e in Reconciler(CASCADE).feed(fixture(name)) if isinstance(e, GateOpened)]
    return g


def test_permission_keys() -> None:
    g = gate("run_command_waiting")
    assert persist_offered(g)
    assert answer_keys(g, GateAnswer(allow=True)) == ["1", "Enter"]
    assert answer_keys(g, GateAnswer(allow=False)) == ["4", "Enter"]
    assert answer_keys(g, GateAnswer(action="decline", allow=False)) == ["4", "Enter"]
    assert answer_keys(g, GateAnswer(allow=False, deny_reason="use make clean")) is None  # text: RPC
    assert answer_keys(g, GateAnswer(allow=True, persist="session")) is None  # persist_keys' job
    assert persist_keys(g, GateAnswer(allow=True, persist="session")) == ["2", "Enter"]
    assert persist_keys(g, GateAnswer(allow=True, persist="always")) == ["3", "Enter"]
    assert persist_keys(g, GateAnswer(allow=False, persist="always")) is None
    assert persist_keys(g, GateAnswer(allow=True)) is None
    plain = g.model_copy(
        update={"permission": g.permission.model_copy(update={"suggested_persist_pattern": ""})}
    )  # type: ignore[union-attr]
    assert not persist_offered(plain)
    assert answer_keys(plain, GateAnswer(allow=True)) == ["1", "Enter"]
    assert answer_keys(plain, GateAnswer(allow=False)) is None  # no recorded menu says where "No" is


def test_question_keys() -> None:
    g = gate("ask_question_waiting")
    first = g.questions[0].options[1]
    assert answer_keys(g, GateAnswer(selections=((first.id,),))) == [first.id, "Enter"]
    assert answer_keys(g, GateAnswer(action="decline")) == ["Escape"]
    assert answer_keys(g, GateAnswer(selections=((), ), write_ins=("my own answer",))) is None  # fmt: skip
    multi = g.model_copy(update={"questions": (g.questions[0].model_copy(update={"multi_select": True}),)})
    assert answer_keys(multi, GateAnswer(selections=(("1", "3"),))) is None
