"""Turn control on its own: turn-sender demotion, and interrupt with and without a parked gate."""

from __future__ import annotations

import pytest

from agy_harness.composition.service.conversation import Conversation, HarnessStats
from agy_harness.composition.service.gate_bridge import GateBridge
from agy_harness.composition.service.turn_control import TurnControl
from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import GateAnswer, SourceUnavailable
from tests.fakes import (
    MemorySnapshot,
    RecordingEmitter,
    RecordingInterrupter,
    RecordingSender,
    RecordingSink,
)

from .test_gate_bridge import gate_of


class Gates:
    """A gate bridge with one parked gate; records what the interrupt did to it, in order."""

    def __init__(self, log: list[str], gate: GateOpened | None, delivered: bool = True) -> None:
        self.log, self.parked_gate, self.delivered = log, gate, delivered
        self.parked_gates = [gate] if gate is not None else []

    def stop_asking(self) -> None:
        self.log.append("stop asking")

    async def answer(
        self, gate: GateOpened, answer: GateAnswer, deadline: float | None = None, decided_by: object = None
    ) -> bool:
        self.log.append(f"answer {gate.gate_id} {answer.action} allow={answer.allow}")
        return self.delivered


def control(
    senders: list[RecordingSender] | None = None, gates: object = None, interrupter: object = None
) -> tuple[TurnControl, RecordingEmitter, HarnessStats]:
    emitter, stats = RecordingEmitter(), HarnessStats()
    conversation = Conversation("c1")
    if gates is None:
        gates = GateBridge(snapshot=MemorySnapshot(), sink=RecordingSink(), emitter=emitter)  # type: ignore[arg-type]
    turns = TurnControl(
        conversation,
        gates=gates,  # type: ignore[arg-type]
        emitter=emitter,  # type: ignore[arg-type]
        turn_senders=senders or [],
        interrupter=interrupter,  # type: ignore[arg-type]
        stats=stats,
    )
    return turns, emitter, stats


async def test_a_sender_agy_cannot_serve_is_demoted_for_good_and_the_turn_goes_to_the_next() -> None:
    rpc, tmux = RecordingSender("rpc", SourceUnavailable("404")), RecordingSender("tmux")
    turns, _, stats = control([rpc, tmux])
    assert await turns.send("one") == "tmux"
    turns.conversation.rebind("c2")
    assert await turns.send("two") == "tmux"
    assert tmux.sent == [("c1", "one"), ("c2", "two")] and stats.demotions == ["rpc"]
    assert [s.name for s in turns.turn_senders] == ["tmux"]


async def test_a_transport_error_is_not_a_demotion() -> None:
    rpc = RecordingSender("rpc", ConnectionError("agy restarting"))
    turns, _, stats = control([rpc, RecordingSender("tmux")])
    with pytest.raises(ConnectionError):
        await turns.send("one")
    assert [s.name for s in turns.turn_senders] == ["rpc", "tmux"] and stats.demotions == []


async def test_with_no_sender_left_a_turn_fails_loudly() -> None:
    turns, _, _ = control([RecordingSender("rpc", SourceUnavailable("404"))])
    with pytest.raises(RuntimeError, match="no turn sender"):
        await turns.send("hello")


async def test_interrupt_without_an_interrupter_does_nothing_and_says_so() -> None:
    turns, emitter, _ = control()
    report = await turns.interrupt()
    assert not report.cancelled and report.detail == "no interrupter for this agy" and emitter.notices == []


async def test_interrupt_denies_the_parked_gate_before_cancelling() -> None:
    log: list[str] = []
    gate, _ = gate_of()
    turns, emitter, _ = control(gates=Gates(log, gate), interrupter=RecordingInterrupter(log))
    report = await turns.interrupt()
    assert log == ["stop asking", f"answer {gate.gate_id} decline allow=False", "interrupt c1"]
    assert report.cancelled and report.denied_gates == (gate.gate_id,)
    assert emitter.notices == [("c1/interrupt/1", report.detail, "info")]
    assert report.detail == f"cancelled the running steps; denied the parked gate {gate.gate_id}"


async def test_interrupts_are_numbered_and_a_refused_denial_is_not_reported_as_denied() -> None:
    log: list[str] = []
    gate, _ = gate_of()
    turns, emitter, _ = control(
        gates=Gates(log, gate, delivered=False), interrupter=RecordingInterrupter(log)
    )
    first = await turns.interrupt()
    turns.gates.parked_gate, turns.gates.parked_gates = None, []  # type: ignore[misc,attr-defined]
    turns.conversation.reconciler.state.status = "running"
    second = await turns.interrupt()
    assert first.denied_gates == () and second.detail == "cancelled the running steps"
    assert [n[0] for n in emitter.notices] == ["c1/interrupt/1", "c1/interrupt/2"]


async def test_an_interrupt_with_agy_idle_says_there_was_nothing_to_interrupt() -> None:
    log: list[str] = []
    turns, emitter, _ = control(interrupter=RecordingInterrupter(log))
    report = await turns.interrupt()  # agy is idle: nothing runs, nothing was sent
    assert report.detail == "nothing to interrupt: agy is idle"
    assert emitter.notices == [("c1/interrupt/1", "nothing to interrupt: agy is idle", "info")]
    sender = RecordingSender("rpc")
    turns.turn_senders = [sender]
    await turns.send("hello")  # sent, not yet seen back from agy: an interrupt now cancels it
    assert (await turns.interrupt()).detail == "cancelled the running steps"
