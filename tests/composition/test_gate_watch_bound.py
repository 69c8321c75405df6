"""The gate watch's bound (issue 34's check of what ran): it follows at most KEPT approved commands
waiting for their result; one dropped past the bound is said on every surface, never left unchecked in
silence."""

from __future__ import annotations

from agy_harness.composition.service.gate_watch import KEPT, GateWatch
from agy_harness.core.answers import parse_answer
from tests.composition.test_gate_bridge import gate_of
from tests.fakes import MemorySnapshot, RecordingEmitter


async def test_an_approval_dropped_past_the_bound_is_said_and_none_before() -> None:
    emitter = RecordingEmitter()
    watch = GateWatch(snapshot=MemorySnapshot(), emitter=emitter)  # type: ignore[arg-type]
    gates = [gate_of(index=i)[0] for i in range(KEPT + 1)]
    for gate in gates[:KEPT]:  # up to the bound: every one followed, nothing to say
        watch.answered(gate, parse_answer(gate, "allow"), gate.step_index)
    await emitter.wait_for(lambda: not watch.tasks)
    assert emitter.notices == []
    last = gates[KEPT]
    watch.answered(last, parse_answer(last, "allow"), last.step_index)  # one past: the oldest is dropped
    await emitter.wait_for(lambda: len(emitter.notices) == 1)
    [(key, text, level)] = emitter.notices
    assert level == "warning" and key == f"{gates[0].id}/ran-unchecked"
    assert text.startswith(f"could not check what agy ran for gate {gates[0].gate_id}: more than {KEPT}")
