"""A human's late answer that agy took at its re-ask (the gate timed out while the human thought, and
agy asked again at a later step): the ledger holds agy's timeout of the first gate and the human's
decision -- not a third record "answered in agy's terminal" for the re-ask -- and the re-ask's result
is that decision's outcome; every surface's withdrawal of the re-ask names the human, not agy's
terminal. On the simulator, through the public path (open_session with the file ledger)."""

from __future__ import annotations

from pathlib import Path

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.ports.events import GateWithdrawn
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on

from .helpers import records, verified


async def test_an_answer_agy_took_at_its_re_ask_is_one_decision_and_its_outcome(tmp_path: Path) -> None:
    async with Simulator(gate_timeout=0.4, pace=0.05) as sim:
        sink = RecordingSink()  # asked, never answers by itself: the answer comes late, through the API
        async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger")) as session:
            await session.send("run: git status")
            await sink.wait_for(lambda: len(sink.asked) >= 2, timeout=30)  # timed out, asked again
            first, re_ask = sink.asked[0], sink.asked[1]
            assert await session.harness.answer(first, GateAnswer(allow=True))
            await sink.wait_for(
                lambda: any(e.type == "tool_result" and e.step_key == re_ask.step_key for e in sink.events),
                timeout=30,
            )
            await sink.wait_for(
                lambda: any(
                    isinstance(e, GateWithdrawn) and e.gate_id == re_ask.gate_id for e in sink.events
                ),
                timeout=30,
            )
    assert re_ask.step_index > first.step_index and sim.executed[-1][0] == "git status"
    decisions = [(r["seq"], r["body"]) for r in records(tmp_path / "ledger", "decision")]
    assert [(b["gate_id"], b["verdict"], b["decided_by"]["kind"]) for _, b in decisions] == [
        (first.gate_id, "timeout", "timeout"),
        (first.gate_id, "allow", "human"),
    ]  # (it once added (re_ask.gate_id, "allow", "agy-terminal"): a decision nobody made there)
    [withdrawn] = [e for e in sink.events if isinstance(e, GateWithdrawn) and e.gate_id == re_ask.gate_id]
    assert withdrawn.decided_by is not None and withdrawn.decided_by.kind == "human"
    assert withdrawn.decided_by.surface == "api"
    [outcome] = [r["body"] for r in records(tmp_path / "ledger", "outcome")]  # (it once had none)
    assert outcome["decision"] == decisions[1][0] and outcome["gate_id"] == first.gate_id
    assert (outcome["command"], outcome["ran_from"], outcome["error"]) == ("git status", "step", False)
    assert verified(tmp_path / "ledger").ok


class ReturnsAfterTheReAskLeft:
    """agy's real delivery, whose return is seen only after the stream showed the re-ask withdrawn:
    the order a slow RPC response gives (agy took the answer, its step moved on, the response lags)."""

    def __init__(self, real: object, sink: RecordingSink, re_ask_id: str) -> None:
        self.real, self.sink, self.re_ask_id = real, sink, re_ask_id

    async def deliver(self, cascade_id: str, interaction: dict[str, object]) -> None:
        await self.real.deliver(cascade_id, interaction)  # type: ignore[attr-defined]
        await self.sink.wait_for(
            lambda: any(
                isinstance(e, GateWithdrawn) and e.gate_id == self.re_ask_id for e in self.sink.events
            ),
            timeout=30,
        )


async def test_the_re_ask_withdrawn_before_the_delivery_returns_is_still_the_humans(tmp_path: Path) -> None:
    async with Simulator(gate_timeout=0.4, pace=0.05) as sim:
        sink = RecordingSink()
        async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger")) as session:
            await session.send("run: git status")
            await sink.wait_for(lambda: len(sink.asked) >= 2, timeout=30)
            first, re_ask = sink.asked[0], sink.asked[1]
            gates = session.harness.gates
            gates.delivery = ReturnsAfterTheReAskLeft(gates.delivery, sink, re_ask.gate_id)  # type: ignore[assignment]
            assert await session.harness.answer(first, GateAnswer(allow=True))
            await sink.wait_for(
                lambda: any(e.type == "tool_result" and e.step_key == re_ask.step_key for e in sink.events),
                timeout=30,
            )
            # the delivery returns only once the re-ask's withdrawal was seen (ReturnsAfterTheReAskLeft):
            # leaving before it stopped the stream that brings it, the delivery waited past the stop's
            # drain and the outcome was never written (failed under load: [] == [2])
            await sink.wait_for(
                lambda: any(
                    isinstance(e, GateWithdrawn) and e.gate_id == re_ask.gate_id for e in sink.events
                ),
                timeout=30,
            )
    kinds = [
        (r["body"]["gate_id"], r["body"]["decided_by"]["kind"])
        for r in records(tmp_path / "ledger", "decision")
    ]
    assert kinds == [(first.gate_id, "timeout"), (first.gate_id, "human")]
    [withdrawn] = [e for e in sink.events if isinstance(e, GateWithdrawn) and e.gate_id == re_ask.gate_id]
    assert withdrawn.decided_by is not None and withdrawn.decided_by.kind == "human"
    assert [r["body"]["decision"] for r in records(tmp_path / "ledger", "outcome")] == [
        records(tmp_path / "ledger", "decision")[1]["seq"]
    ]
