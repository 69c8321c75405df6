"""The gate bridge on its own: each gate its own ask (the newest first when a sink shows few),
withdrawal, one answer per gate, delivery outcomes, retries."""

from __future__ import annotations

import asyncio
from typing import Any

from agy_harness.composition.service.conversation import HarnessOptions
from agy_harness.composition.service.gate_bridge import GateBridge
from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import GateOpened, GateWithdrawn
from agy_harness.ports.protocols import GateAnswer, InteractionRejected
from tests.core.fixtures import CASCADE, fixture
from tests.fakes import FakeClock, MemorySnapshot, RecordingDelivery, RecordingEmitter, RecordingSink

FAST = HarnessOptions(fallback_backoff=0.001, max_backoff=0.01, answer_deadline=0.1)


def gate_of(name: str = "run_command_waiting", index: int | None = None) -> tuple[GateOpened, dict[str, Any]]:
    step = fixture(name)
    if index is not None:
        step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = index
    [gate] = [e for e in Reconciler(CASCADE).feed(step) if isinstance(e, GateOpened)]
    return gate, step


def bridge(
    steps: list[Any], delivery: RecordingDelivery | None = None, sink: RecordingSink | None = None
) -> tuple[GateBridge, RecordingSink, RecordingEmitter, MemorySnapshot]:
    sink, emitter, snap = sink or RecordingSink(), RecordingEmitter(), MemorySnapshot(steps)
    return (
        GateBridge(
            snapshot=snap, sink=sink, emitter=emitter, delivery=delivery, options=FAST, clock=FakeClock()
        ),
        sink,
        emitter,
        snap,
    )  # type: ignore[arg-type]


async def test_gates_are_asked_each_in_its_own_ask_and_delivered() -> None:
    first, s1 = gate_of(index=6)
    second, s2 = gate_of(index=9)
    delivery = RecordingDelivery()
    gates, sink, _, _ = bridge([s1, s2], delivery)
    gates.start()
    gates.observe([first, second, first])  # a gate seen twice is asked once
    await sink.wait_for(lambda: len(sink.asked) == 2)  # the second does not wait for the first's answer
    assert [g.gate_id for g in sink.asked] == [first.gate_id, second.gate_id]
    assert gates.parked_gates == [first, second] and gates.parked_gate == second
    await sink.answers.put(GateAnswer(allow=True))
    await sink.answers.put(GateAnswer(allow=False))
    await sink.wait_for(lambda: len(delivery.delivered) == 2)
    assert sorted((d["stepIndex"], d["permission"]["allow"]) for d in delivery.delivered) == [
        (6, True),
        (9, False),
    ]
    gates.observe([first])  # delivered: never asked again
    for task in gates.stop():
        task.cancel()
    assert len(sink.asked) == 2


async def test_a_gate_withdrawn_while_asked_is_cancelled() -> None:
    first, s1 = gate_of(index=6)
    second, s2 = gate_of(index=9)
    gates, sink, _, _ = bridge([s1, s2], RecordingDelivery())
    gates.start()
    gates.observe([first, second])
    await sink.wait_for(lambda: len(sink.asked) == 2)
    gates.observe([GateWithdrawn(id="w2", cascade_id=CASCADE, gate_id=second.gate_id)])
    gates.observe([GateWithdrawn(id="w1", cascade_id=CASCADE, gate_id=first.gate_id)])
    await sink.wait_for(lambda: len(sink.cancelled) == 2 and gates.parked_gate is None)
    assert sorted(sink.cancelled) == sorted([first.gate_id, second.gate_id])
    for task in gates.stop():
        task.cancel()


async def test_a_gate_answered_before_it_is_asked_is_not_asked() -> None:
    gate, _ = gate_of(index=6)
    gates, sink, _, snap = bridge([fixture("run_command_done")])
    gates.start()
    gates.observe([gate, gate_of(index=9)[0]])
    snap.steps = [fixture("run_command_done"), gate_of(index=9)[1]]
    await sink.wait_for(lambda: sink.asked)
    assert [g.step_index for g in sink.asked] == [9]
    for task in gates.stop():
        task.cancel()


async def test_withdraw_all_drops_every_ask() -> None:
    first, s1 = gate_of(index=6)
    second, s2 = gate_of(index=9)
    gates, sink, _, _ = bridge([s1, s2])
    gates.start()
    gates.observe([first, second])
    await sink.wait_for(lambda: len(sink.asked) == 2)
    gates.withdraw_all()
    await sink.wait_for(lambda: gates.parked_gate is None and len(sink.cancelled) == 2)
    gates.observe([GateWithdrawn(id="w", cascade_id=CASCADE, gate_id="nothing")])
    assert len(sink.asked) == 2
    for task in gates.stop():
        task.cancel()


async def test_a_sink_showing_one_ask_is_shown_the_newest_and_the_older_comes_back() -> None:
    first, s1 = gate_of(index=6)
    second, s2 = gate_of(index=9)
    delivery = RecordingDelivery()
    gates, sink, _, _ = bridge([s1, s2], delivery, RecordingSink(max_concurrent_asks=1))
    gates.start()
    gates.observe([first])
    await sink.wait_for(lambda: len(sink.asked) == 1)
    gates.observe([second])  # no room: the first gives way to the newest
    await sink.wait_for(lambda: len(sink.asked) == 2 and sink.cancelled == [first.gate_id])
    assert gates.parked_gates == [second]
    await sink.answers.put(GateAnswer(allow=False))
    await sink.wait_for(lambda: len(sink.asked) == 3)  # answered: the first is asked again
    assert [g.step_index for g in sink.asked] == [6, 9, 6]
    await sink.answers.put(GateAnswer(allow=True))
    await sink.wait_for(lambda: len(delivery.delivered) == 2)
    assert [(d["stepIndex"], d["permission"]["allow"]) for d in delivery.delivered] == [(9, False), (6, True)]
    for task in gates.stop():
        task.cancel()


async def test_a_gate_takes_one_answer() -> None:
    gate, step = gate_of()
    delivery = RecordingDelivery()
    gates, _, emitter, _ = bridge([step], delivery)
    first, second = await asyncio.gather(
        gates.answer(gate, GateAnswer(allow=True)), gates.answer(gate, GateAnswer(allow=False))
    )
    assert (first, second) == (True, False) and [d["permission"] for d in delivery.delivered] == [
        {"allow": True}
    ]
    assert not await gates.answer(gate, GateAnswer(allow=True))  # a retry after it was delivered
    assert len(delivery.delivered) == 1
    assert [text.endswith("it already took an answer") for _, text, _ in emitter.notices] == [True, True]


async def test_an_answer_that_was_not_delivered_can_be_given_again() -> None:
    gate, step = gate_of()
    delivery = RecordingDelivery()
    gates, _, _, snap = bridge([], delivery)
    snap.steps = []  # agy shows no such step now
    assert not await gates.answer(gate, GateAnswer(allow=True))
    snap.steps = [step]
    assert await gates.answer(gate, GateAnswer(allow=True))


async def test_an_answer_from_elsewhere_ends_the_ask() -> None:
    gate, step = gate_of()
    delivery = RecordingDelivery()
    gates, sink, _, _ = bridge([step], delivery)
    gates.start()
    gates.observe([gate])
    await sink.wait_for(lambda: sink.asked)
    assert await gates.answer(gate, GateAnswer(allow=True))  # e.g. Session.answer
    assert sink.cancelled == [gate.gate_id] and gates.parked_gate is None
    await sink.answers.put(GateAnswer(allow=True))  # nothing asks any more: never delivered twice
    for _ in range(50):  # the loop runs whatever is ready (no real time passes)
        await asyncio.sleep(0)
    assert sink.answers.qsize() == 1  # nobody took it
    assert len(delivery.delivered) == 1


async def test_without_a_delivery_adapter_an_answer_is_refused_with_a_notice() -> None:
    gate, step = gate_of()
    gates, _, emitter, _ = bridge([step], delivery=None)
    assert not await gates.answer(gate, GateAnswer(allow=True))
    assert [(n[0], n[2]) for n in emitter.notices] == [(gate.id, "error")]


async def test_a_gate_gone_from_agy_is_reported_not_delivered() -> None:
    gate, _ = gate_of()
    delivery = RecordingDelivery()
    gates, _, emitter, _ = bridge([fixture("run_command_done")], delivery)
    assert not await gates.answer(gate, GateAnswer(allow=True))
    assert delivery.delivered == [] and [n[2] for n in emitter.notices] == ["warning"]


async def test_transport_failures_are_retried_and_give_up_with_a_notice() -> None:
    gate, step = gate_of()
    flaky = RecordingDelivery(down=2)
    gates, _, emitter, _ = bridge([step], flaky)
    assert await gates.answer(gate, GateAnswer(allow=True))
    assert flaky.attempts == 3 and len(flaky.delivered) == 1 and emitter.notices == []
    down = RecordingDelivery(down=99)
    gates, _, emitter, _ = bridge([step], down)
    assert not await gates.answer(gate, GateAnswer(allow=True))
    assert down.attempts > 3  # retried for the whole answer_deadline, not 3 times
    [notice] = [n[1] for n in emitter.notices]
    assert notice.startswith(f"gate {gate.gate_id}: agy did not take the answer within 0.1s")


async def test_a_rejection_agy_calls_gone_is_reported_once() -> None:
    gate, step = gate_of()
    delivery = RecordingDelivery([InteractionRejected("cascade not found", status=404)])
    gates, _, emitter, snap = bridge([step], delivery)

    def left_waiting(cascade_id: str, interaction: dict[str, Any]) -> None:
        snap.steps = [fixture("run_command_done")]  # the step left WAITING as the answer arrived

    delivery.on_deliver = left_waiting
    assert not await gates.answer(gate, GateAnswer(allow=True))
    assert [n[2] for n in emitter.notices] == ["warning"] and delivery.delivered == []


async def test_a_gate_only_agys_terminal_answers_is_never_asked_nor_answered() -> None:
    """Kind ``other`` (e.g. a file-write review): even when agy cannot be re-read (the bridge would
    otherwise ask anyway), nobody is asked, and a direct answer is refused with nothing sent."""
    gate, _ = gate_of()
    other = gate.model_copy(
        update={"kind": "other", "answerable": False, "permission": None, "interaction": "fileReview"}
    )
    delivery = RecordingDelivery()
    sink, emitter = RecordingSink(), RecordingEmitter()
    gates = GateBridge(
        snapshot=MemorySnapshot(down=True),
        sink=sink,
        emitter=emitter,
        delivery=delivery,
        options=FAST,
        clock=FakeClock(),
    )  # type: ignore[arg-type]
    gates.start()
    gates.observe([other])
    for answer in (GateAnswer(allow=True), GateAnswer(allow=False), GateAnswer(action="decline")):
        assert await gates.answer(other, answer) is False
    for task in gates.stop():
        task.cancel()
    assert sink.asked == [] and delivery.delivered == []
    assert len(emitter.notices) == 3 and all("own terminal" in text for _, text, _ in emitter.notices)


async def test_an_answer_checked_for_another_gate_is_refused_and_nothing_is_sent() -> None:
    from agy_harness.core.answers import parse_answer

    first, s1 = gate_of(index=6)
    second, s2 = gate_of(index=9)
    delivery = RecordingDelivery()
    gates, _, emitter, _ = bridge([s1, s2], delivery)
    assert not await gates.answer(second, parse_answer(first, "allow"))
    assert delivery.delivered == [] and "read for another request" in emitter.notices[0][1]
    assert await gates.answer(first, parse_answer(first, "allow"))
    assert [d["stepIndex"] for d in delivery.delivered] == [6]
