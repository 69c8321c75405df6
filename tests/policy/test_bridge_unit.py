"""The gate bridge with a policy, on its own: an allow is delivered and nobody is asked; a deny tells
agy the message and refuses every later answer; an allow agy did not take goes to the human; a policy
that is off says so."""

from __future__ import annotations

from agy_harness.composition.service.gate_bridge import GateBridge
from agy_harness.ports.events import GateOpened
from agy_harness.ports.policy import Decision
from agy_harness.ports.protocols import GateAnswer
from tests.composition.test_gate_bridge import FAST, gate_of
from tests.fakes import FakeClock, MemorySnapshot, RecordingDelivery, RecordingEmitter, RecordingSink


class Fixed:
    """A GatePolicy that decides every gate the same way."""

    def __init__(self, decision: Decision, warnings: list[str] | None = None) -> None:
        self.decision, self._warnings, self.seen = decision, warnings or [], []  # type: ignore[var-annotated]

    def decide(self, gate: GateOpened) -> Decision:
        self.seen.append(gate.gate_id)
        return self.decision

    def warnings(self) -> list[str]:
        return self._warnings


ALLOW = Decision(verdict="allow", rule_id="r", source="f.toml:3", rules_hash="abc")
DENY = Decision(verdict="deny", rule_id="no", source="f.toml:9", message="use make clean", rules_hash="abc")


def make(policy: Fixed, delivery: RecordingDelivery, steps: list[object]):  # type: ignore[no-untyped-def]
    sink, emitter = RecordingSink(), RecordingEmitter()
    gates = GateBridge(
        snapshot=MemorySnapshot(steps), sink=sink, emitter=emitter, delivery=delivery, options=FAST,
        clock=FakeClock(), policy=policy,
    )  # type: ignore[arg-type]  # fmt: skip
    gates.start()
    return gates, sink, emitter


async def test_an_allow_is_delivered_and_nobody_is_asked() -> None:
    gate, step = gate_of()
    delivery = RecordingDelivery()
    gates, sink, emitter = make(Fixed(ALLOW), delivery, [step])
    gates.observe([gate])
    await sink.wait_for(lambda: len(emitter.notices) == 1)
    assert [d["permission"] for d in delivery.delivered] == [{"allow": True}]
    assert sink.asked == [] and emitter.notices[0][1:] == ("allowed by rule r (f.toml:3)", "info")
    assert gates.rule_decision(gate.gate_id) == ALLOW  # what a ledger records: the rule and the hash


async def test_a_deny_tells_agy_and_refuses_every_later_answer() -> None:
    gate, step = gate_of()
    delivery = RecordingDelivery()
    gates, sink, emitter = make(Fixed(DENY), delivery, [step])
    gates.observe([gate])
    await sink.wait_for(lambda: len(emitter.notices) == 1)
    assert delivery.delivered[0]["permission"] == {"allow": False, "userDenyInstruction": "use make clean"}
    for answer in (GateAnswer(allow=True), GateAnswer(allow=True, persist="always"), GateAnswer(allow=False)):
        assert not await gates.answer(gate, answer)
    assert len(delivery.delivered) == 1 and sink.asked == []
    refusals = [text for _, text, _ in emitter.notices[1:]]
    assert len(refusals) == 3 and all(
        "it was denied by rule no (f.toml:9): use make clean" in t for t in refusals
    )


async def test_an_allow_agy_did_not_take_goes_to_the_human() -> None:
    gate, step = gate_of()
    delivery = RecordingDelivery(down=1000)  # agy never takes it
    gates, sink, _ = make(Fixed(ALLOW), delivery, [step])
    gates.observe([gate])
    await sink.wait_for(lambda: len(sink.asked) == 1)
    assert sink.asked == [gate] and gates.rule_decision(gate.gate_id) is None
    for task in gates.stop():
        task.cancel()


async def test_ask_goes_to_the_human_and_a_policy_that_is_off_says_why() -> None:
    gate, step = gate_of()
    policy = Fixed(
        Decision(verdict="ask", reason="no rule"), warnings=["rules are off, every gate is asked: x"]
    )
    gates, sink, emitter = make(policy, RecordingDelivery(), [step])
    await gates.tell_policy("c")
    assert emitter.notices == [("c/rules-off/" + emitter.notices[0][0].rsplit("/", 1)[1],
                                "rules are off, every gate is asked: x", "warning")]  # fmt: skip
    gates.observe([gate])
    await sink.wait_for(lambda: len(sink.asked) == 1)  # ask: the human, as without rules
    assert policy.seen == [gate.gate_id]
    for task in gates.stop():
        task.cancel()


async def test_a_policy_that_raises_asks_the_human() -> None:
    class Broken(Fixed):
        def decide(self, gate: GateOpened) -> Decision:
            raise RuntimeError("bug")

    gate, step = gate_of()
    gates, sink, _ = make(Broken(ALLOW), RecordingDelivery(), [step])
    gates.observe([gate])
    await sink.wait_for(lambda: len(sink.asked) == 1)
    assert gates.rule_decision(gate.gate_id) is None
    for task in gates.stop():
        task.cancel()
