"""The terminal sink says a re-asked question once (issue 47: attach repeated the question card).

The live flow and the history's retries run through the real CLI in tests/cli/test_attach_reask.py;
here the case an attach meets when it starts after agy's first wait timed out (that ask is read back
from the history as a call that ended in error, then the re-ask waits), and the cases that are no
re-ask."""

from __future__ import annotations

import asyncio

from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.ports.events import Decider, GateWithdrawn, ToolCall, ToolResult, UserMessage

from .samples import QUESTION_GATE, C
from .test_terminal import console, scripted, text_of

ARGS = {"questions": [{"question": q.question} for q in QUESTION_GATE.questions]}
REASK = QUESTION_GATE.model_copy(update={"gate_id": "gate-t1-9", "step_index": 9, "id": "t1/9/gate"})


def call(n: int) -> ToolCall:
    return ToolCall(id=f"t1/{n}/call", cascade_id=C, call_id=f"call-{n}", name="ask_question", arguments=ARGS)


def result(n: int, *, error: bool) -> ToolResult:
    return ToolResult(
        id=f"t1/{n}/result", cascade_id=C, call_id=f"call-{n}", name="ask_question", output="", is_error=error
    )


async def test_a_question_waiting_after_an_unanswered_call_in_the_history_says_it_is_asked_again() -> None:
    c = console()
    sink = TerminalSink(c, input_fn=scripted("1", "2"))
    await sink.deliver([call(7), result(7, error=True)])
    await asyncio.wait_for(sink.ask(REASK), 30)
    out = text_of(c)
    assert "↻ agy asks again (the call above ended unanswered):" in out
    assert out.index("╭─ ⚙ ask_question") < out.index("↻ agy asks again") < out.index("╭─ ? question")


async def test_the_same_question_after_an_answered_call_or_in_a_new_turn_is_no_reask() -> None:
    c = console()
    sink = TerminalSink(c, input_fn=scripted("1", "2", "1", "2"))
    await sink.deliver([call(7), result(7, error=False)])  # answered: agy asks it anew
    await asyncio.wait_for(sink.ask(REASK), 30)
    user = UserMessage(id="u/user", cascade_id=C, step_key="u", text="ask it again")
    await sink.deliver([call(11), result(11, error=True), user])  # a new turn after it
    await asyncio.wait_for(sink.ask(REASK.model_copy(update={"gate_id": "gate-t1-13"})), 30)
    assert "↻" not in text_of(c)


async def test_a_card_whose_wait_timed_out_is_said_closed_once_and_its_reask_says_so() -> None:
    c = console()
    sink = TerminalSink(c, input_fn=scripted("1", "2"))
    hold = asyncio.Event()
    sink._ask_keyboard = lambda _gate: hold.wait()  # type: ignore[assignment,method-assign,return-value]
    ask = asyncio.create_task(sink.ask(QUESTION_GATE))
    await asyncio.sleep(0.05)
    timed_out = Decider(kind="timeout", at="2026-01-01T12:00:00+00:00")
    withdrawn = GateWithdrawn(
        id="w", cascade_id=C, gate_id=QUESTION_GATE.gate_id, reason="timed out", decided_by=timed_out
    )
    await sink.deliver([withdrawn])
    await sink.withdraw(QUESTION_GATE.gate_id)  # (the bridge, once the sink took the withdrawal)
    await asyncio.gather(ask, return_exceptions=True)
    await sink.deliver([call(7), result(7, error=True)])
    del sink._ask_keyboard
    await asyncio.wait_for(sink.ask(REASK), 30)
    out = text_of(c)
    assert out.count("the gate closed: timed out") == 1 and "· timed out" not in out
    assert "agy no longer waits" not in out  # the closing was said: the prompt does not say it again
    assert "⚙ ask_question (as asked above)" in out and "╭─ ⚙ ask_question" not in out
    assert out.count("↻ agy asks again (the card above timed out):") == 1
    assert out.count("╭─ ? question") == 2
