"""Hostile option lists (a neighbour of issue #35 cases 1 and 2): agy sends a question's options,
ids and labels as the model wrote them. Two options whose labels differ only in case, two options
sharing one id, or an option with no id whose place-number is another option's id: an answer that
names an option by its exact label reached the FIRST option it folded to (another option than the
one named), and a shared id was sent to agy, which cannot tell which option the human meant.

Now an answer reaches the option it names exactly, and a choice that could name several options is
refused (fail closed: an ambiguous answer is never guessed); a decline still goes through. Through
the public API on the simulator (the step's ``selectedOptionIds`` are what agy received)."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import rewrite_question
from agy_harness.core.answers import AnswerError
from agy_harness.ports.events import GateOpened
from tests.binding.helpers import Watched, waiting, watched


async def _question(sim: Simulator, w: Watched, options: list[dict[str, str]]) -> GateOpened:
    mark = len(w.events)
    await w.session.send("ask: which one?")
    first = await w.gate(after=mark)
    rewrite_question(sim, first.step_index, options)
    texts = [o["text"] for o in options]

    def rewritten(e: object) -> bool:
        return (
            isinstance(e, GateOpened)
            and w.events.index(e) > w.events.index(first)
            and [o.text for o in e.questions[0].options] == texts
        )

    found = await w.until(rewritten, "the rewritten question")
    assert isinstance(found, GateOpened)
    return found


def _selected(sim: Simulator, index: int) -> list[str]:
    questions = sim.steps()[index]["askQuestion"]["questions"]
    return list(questions[0].get("selectedOptionIds", []))


async def test_an_exact_label_reaches_its_own_option_and_a_case_folded_one_is_refused(sim: Simulator) -> None:
    async with watched(sim) as w:
        gate = await _question(
            sim, w, [{"id": "1", "text": "Keep the build"}, {"id": "2", "text": "keep the build"}]
        )
        with pytest.raises(AnswerError, match="several options"):
            await w.session.answer(gate.gate_id, "KEEP THE BUILD")  # names both, folded: refused
        assert waiting(sim, gate.step_index)
        await w.session.answer(gate.gate_id, "keep the build")  # option 2's exact label
        await w.idle(after=w.events.index(gate))
    assert _selected(sim, gate.step_index) == ["2"]  # (was ["1"]: the first option it folded to)


@pytest.mark.parametrize(
    "options",
    [
        [{"id": "1", "text": "Keep the build"}, {"id": "1", "text": "Delete the build"}],
        [{"text": "Keep the build"}, {"id": "1", "text": "Delete the build"}],  # no id: place 1
    ],
    ids=["shared-id", "missing-id"],
)
async def test_a_choice_whose_id_several_options_share_is_refused(
    sim: Simulator, options: list[dict[str, str]]
) -> None:
    async with watched(sim) as w:
        gate = await _question(sim, w, options)
        for answer in ("Delete the build", "1", ["Keep the build"]):
            with pytest.raises(AnswerError, match="share"):
                await w.session.answer(gate.gate_id, answer)
        assert waiting(sim, gate.step_index)  # nothing was sent
        await w.session.answer(gate.gate_id, "decline")  # a refusal still goes through
        await w.idle(after=w.events.index(gate))
    assert _selected(sim, gate.step_index) == []
