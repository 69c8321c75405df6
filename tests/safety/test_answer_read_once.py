"""Parse, don't validate: an answer given through the public API is read once on its way to agy (the
parser resolves each question once), and what agy records is what was read."""

from __future__ import annotations

import asyncio
import os

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.root.session import open_session
from agy_harness.core import answer_questions
from agy_harness.ports.events import GateOpened
from tests.integration.helpers import FAST


async def test_a_question_answer_is_read_once_from_the_api_to_agy(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    resolve = answer_questions.resolve_question  # (where the one parser reads a question's answer)

    def counted(question, choices, write_in=""):  # type: ignore[no-untyped-def]
        reads.append(question.question)
        return resolve(question, choices, write_in)

    monkeypatch.setattr(answer_questions, "resolve_question", counted)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s:
        await s.send("ask: which part should we work on first?")
        async for event in s.events():
            if isinstance(event, GateOpened):
                gate = event
                break
        await s.answer(gate.gate_id, "2")
        async with asyncio.timeout(15):
            while not [x for x in sim.steps() if x.get("completedInteractions")]:
                await asyncio.sleep(0.02)
    assert reads == [gate.questions[0].question]  # once: not again by the bridge, the payload, the keys
    [step] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION"]
    [response] = step["completedInteractions"][0]["response"]["askQuestion"]["responses"]
    assert response["selectedOptionIds"] == ["2"]
