from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Callable

import pytest
from rich.console import Console

from agy_harness.adapters.sinks.jsonl import JsonlSink
from agy_harness.adapters.sinks.terminal import (
    TerminalSink,
    describe_answer,
    parse_choice,
    parse_permission,
    truncate_output,
)
from agy_harness.core.elicitation import interaction_payload
from agy_harness.ports.events import (
    EVENT_ADAPTER,
    AssistantMessage,
    GateOpened,
    TextDelta,
    ToolCall,
    ToolResult,
)
from agy_harness.ports.protocols import EventSink, GateAnswer

from .samples import PERMISSION_GATE, QUESTION_GATE, SAMPLES, C


def console() -> Console:
    return Console(record=True, width=100, color_system=None, force_terminal=False, file=io.StringIO())


def text_of(c: Console) -> str:
    return c.export_text(clear=False)


def scripted(*lines: str) -> Callable[[str], str]:
    queue = list(lines)

    def input_fn(_prompt: str) -> str:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return input_fn


def delta(i: int, text: str, final: bool = False, mid: str = "m1") -> TextDelta:
    return TextDelta(id=f"{mid}/d{i}", cascade_id=C, delta=text, message_id=mid, index=i, final=final)


def message(text: str, mid: str = "m1") -> AssistantMessage:
    return AssistantMessage(id=f"{mid}/text", cascade_id=C, text=text, message_id=mid)


REPLY = "The quick brown fox jumps over the lazy dog."


async def test_streamed_text_appears_exactly_once() -> None:
    c = console()
    sink = TerminalSink(c)
    assert isinstance(sink, EventSink)
    events = [
        delta(0, "The quick brown "),
        delta(1, "fox jumps over "),
        delta(2, "the lazy dog.", final=True),
    ]
    assert await sink.deliver(events) == 3
    assert await sink.deliver([message(REPLY)]) == 1
    out = text_of(c)
    assert out.count(REPLY) == 1
    assert out.count("lazy") == 1


async def test_replayed_deltas_are_not_shown_twice() -> None:
    c = console()
    sink = TerminalSink(c)
    await sink.deliver(
        [delta(0, "The quick brown "), delta(0, "The quick brown "), delta(1, "fox jumps over ")]
    )
    await sink.deliver([delta(1, "fox jumps over "), delta(2, "the lazy dog.", final=True), message(REPLY)])
    assert text_of(c).count(REPLY) == 1


async def test_cut_stream_prints_only_the_missing_tail() -> None:
    c = console()
    sink = TerminalSink(c)
    await sink.deliver([delta(0, "The quick brown "), delta(1, "fox ")])
    await sink.deliver([message(REPLY)])
    out = text_of(c)
    assert out.count("quick brown") == 1
    assert out.count("jumps over the lazy dog.") == 1


async def test_unstreamed_and_diverged_messages_are_printed_whole() -> None:
    c = console()
    sink = TerminalSink(c)
    await sink.deliver([message("Only committed.", mid="m2")])
    await sink.deliver([delta(0, "Draft tex", mid="m3"), message("Final text", mid="m3")])
    out = text_of(c)
    assert out.count("Only committed.") == 1
    assert "Final text" in out


async def test_interleaved_output_keeps_lines_apart() -> None:
    c = console()
    sink = TerminalSink(c)
    await sink.deliver(SAMPLES)
    lines = text_of(c).splitlines()
    assert any(line.startswith("◆ Hello!") for line in lines)
    assert any(line.startswith("thinking Thinking") for line in lines)
    assert any("❯ hello there" in line for line in lines)
    assert any("● running" in line for line in lines) and any("○ idle" in line for line in lines)
    assert any("tokens · in 120 · out 30 · cache 7 · MODEL_X" in line for line in lines)
    assert any("model → MODEL_X" in line for line in lines)
    assert any("the gate closed: answered in the TUI" in line for line in lines)
    assert any("new conversation (/clear)" in line for line in lines)
    assert not any("gate-t1-9" in line or "cascade-2" in line for line in lines)  # no internal ids
    assert any("⚠ something to see" in line for line in lines)
    assert text_of(c).count("Hello!") == 1


async def test_tool_cards_show_command_and_truncated_output() -> None:
    c = console()
    sink = TerminalSink(c, max_output_lines=6)
    call = ToolCall(
        id="t/5/call",
        cascade_id=C,
        call_id="t/5",
        name="run_command",
        arguments={"CommandLine": "git status --short", "Cwd": "/repo", "toolSummary": "Check the tree"},
    )
    output = "\n".join(f"line {i}" for i in range(1, 41))
    result = ToolResult(id="t/5/result", cascade_id=C, call_id="t/5", name="run_command", output=output)
    await sink.deliver([call, result])
    out = text_of(c)
    assert "run_command" in out
    assert "$ git status --short" in out and "in /repo" in out and "Check the tree" in out
    assert "line 1 " in out and "line 40" in out
    assert "line 20" not in out
    assert "more lines" in out


async def test_tool_card_without_a_command_lists_arguments() -> None:
    c = console()
    call = ToolCall(
        id="t/6/call", cascade_id=C, call_id="t/6", name="view_file", arguments={"AbsolutePath": "/a/b.py"}
    )
    failed = ToolResult(id="t/6/r", cascade_id=C, call_id="t/6", name="view_file", output="", is_error=True)
    await TerminalSink(c).deliver([call, failed])
    out = text_of(c)
    assert "/a/b.py" in out and "AbsolutePath" not in out and "✗ view_file" in out and "(no output)" in out


def test_truncate_output() -> None:
    assert truncate_output("a\nb\n") == "a\nb"
    assert truncate_output("") == ""
    cut = truncate_output("\n".join(str(i) for i in range(100)), max_lines=8).split("\n")
    assert len(cut) == 8 and cut[0] == "0" and cut[-1] == "99" and "more lines" in cut[-3]
    assert truncate_output("x" * 1000, max_line_chars=10) == "x" * 9 + "…"


def test_parse_choice() -> None:
    single, multi = QUESTION_GATE.questions
    assert parse_choice(single, "2") == ("2",)
    assert parse_choice(single, " Backend ") == ("Backend",)
    assert parse_choice(single, "1,2") is None  # single-select
    assert parse_choice(single, "7") is None
    assert parse_choice(single, "") is None
    assert parse_choice(multi, "2, 1, 2") == ("2", "1")
    assert parse_choice(multi, "unit tests, then docs") == ("unit tests, then docs",)
    assert parse_permission("Y") is True and parse_permission("no") is False and parse_permission("?") is None


async def test_question_gate_answered_from_the_keyboard() -> None:
    c = console()
    sink = TerminalSink(c, input_fn=scripted("", "9", "2", "1,2"))
    answer = await asyncio.wait_for(sink.ask(QUESTION_GATE), 30)
    assert answer == GateAnswer(selections=(("2",), ("1", "2")))
    out = text_of(c)
    assert "Which part first?" in out and "1) Backend" in out and "2) Frontend" in out
    assert "comma-separated" in out
    assert out.count("not a valid choice") == 2
    assert "→ Frontend; Unit, Integration" in out
    payload = interaction_payload(QUESTION_GATE, answer)
    assert payload["askQuestion"]["responses"] == [
        {"question": "Which part first?", "selectedOptionIds": ["2"]},
        {"question": "Which tests?", "selectedOptionIds": ["1", "2"]},
    ]


async def test_free_text_becomes_a_write_in() -> None:
    sink = TerminalSink(console(), input_fn=scripted("the docs", "Unit"))
    answer = await sink.ask(QUESTION_GATE)
    responses = interaction_payload(QUESTION_GATE, answer)["askQuestion"]["responses"]
    assert responses[0] == {
        "question": "Which part first?",
        "selectedOptionIds": [],
        "writeInResponse": "the docs",
    }
    assert responses[1]["selectedOptionIds"] == ["1"]


@pytest.mark.parametrize(
    ("lines", "answer"),
    [
        (("maybe", "y"), GateAnswer(allow=True)),
        (("n",), GateAnswer(allow=False)),
        (("/decline",), GateAnswer(action="decline", allow=False)),
        ((), GateAnswer(action="cancel", allow=False)),  # end of input
    ],
)
async def test_permission_gate_answered_from_the_keyboard(lines: tuple[str, ...], answer: GateAnswer) -> None:
    c = console()
    sink = TerminalSink(c, input_fn=scripted(*lines))
    assert await asyncio.wait_for(sink.ask(PERMISSION_GATE), 30) == answer
    out = text_of(c)
    assert "permission: run_command" in out and "$ git status" in out and "in /repo" in out
    assert "allow? [y/n]" in out


async def test_keyboard_runs_off_the_loop() -> None:
    """While the human thinks, events keep rendering."""
    release = threading.Event()

    def slow_input(_prompt: str) -> str:
        release.wait(5)
        return "y"

    c = console()
    sink = TerminalSink(c, input_fn=slow_input)
    ask = asyncio.ensure_future(sink.ask(PERMISSION_GATE))
    await asyncio.sleep(0.05)
    assert await sink.deliver([message("rendered meanwhile", mid="m9")]) == 1
    assert "rendered meanwhile" in text_of(c)
    assert not ask.done()
    release.set()
    assert await asyncio.wait_for(ask, 30) == GateAnswer(allow=True)


async def test_withdraw_closes_the_prompt_and_the_next_prompt_reuses_the_reader() -> None:
    lines: list[str] = []
    ready = threading.Event()

    def input_fn(_prompt: str) -> str:
        ready.wait(5)
        return lines.pop(0)

    c = console()
    sink = TerminalSink(c, input_fn=input_fn)
    first = asyncio.ensure_future(sink.ask(PERMISSION_GATE))
    await asyncio.sleep(0.05)
    await sink.withdraw(PERMISSION_GATE.gate_id)
    with pytest.raises(asyncio.CancelledError):
        await first
    assert "prompt is closed" in text_of(c)
    second = asyncio.ensure_future(sink.ask(QUESTION_GATE))
    await asyncio.sleep(0.05)
    lines.extend(["1", "2"])
    ready.set()
    assert await asyncio.wait_for(second, 30) == GateAnswer(selections=(("1",), ("2",)))


async def test_auto_answer_is_printed() -> None:
    c = console()
    sink = TerminalSink(c, auto_answer=lambda g: GateAnswer(allow=False), input_fn=scripted())
    assert await sink.ask(PERMISSION_GATE) == GateAnswer(allow=False)
    q = TerminalSink(c, auto_answer=lambda g: GateAnswer(selections=(("1",), ("2",))))
    assert await q.ask(QUESTION_GATE) == GateAnswer(selections=(("1",), ("2",)))
    out = text_of(c)
    assert "auto-answer → deny" in out and "auto-answer → Backend; Integration" in out


def test_describe_answer() -> None:
    assert describe_answer(PERMISSION_GATE, GateAnswer(allow=True)) == "allow"
    assert describe_answer(PERMISSION_GATE, GateAnswer()).startswith("no answer")
    assert describe_answer(PERMISSION_GATE, GateAnswer(action="cancel")) == "cancelled"
    answer = GateAnswer(selections=(("Backend",), ()), write_ins=("", "x"))
    assert describe_answer(QUESTION_GATE, answer) == "Backend; x"


class _FailsOnce(io.StringIO):
    """A terminal whose first write fails (the render of the first event breaks)."""

    failed = False

    def write(self, text: str) -> int:
        if not self.failed:
            self.failed = True
            raise OSError("the terminal failed a write")
        return super().write(text)


async def test_a_render_error_does_not_wedge_the_stream() -> None:
    screen = _FailsOnce()
    sink = TerminalSink(Console(width=100, color_system=None, force_terminal=False, file=screen))
    assert await sink.deliver([message("x"), *SAMPLES[:2]]) == 3
    assert screen.failed and "hello there" in screen.getvalue()  # the next events are shown


# -- jsonl ------------------------------------------------------------------------------------------


async def test_jsonl_prints_one_json_line_per_event() -> None:
    stream = io.StringIO()
    sink = JsonlSink(stream)
    assert isinstance(sink, EventSink)
    assert await sink.deliver(SAMPLES) == len(SAMPLES)
    lines = stream.getvalue().splitlines()
    assert len(lines) == len(SAMPLES)
    assert [EVENT_ADAPTER.validate_python(json.loads(line)) for line in lines] == SAMPLES
    assert json.loads(lines[0]) == SAMPLES[0].model_dump(mode="json")


async def test_jsonl_defaults_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    await JsonlSink().deliver(SAMPLES[:1])
    assert json.loads(capsys.readouterr().out)["text"] == "hello there"


async def test_jsonl_answers_via_callback_sync_or_async() -> None:
    sync = JsonlSink(io.StringIO(), answer=lambda g: GateAnswer(allow=g.kind == "permission"))
    assert await sync.ask(PERMISSION_GATE) == GateAnswer(allow=True)

    async def later(gate: GateOpened) -> GateAnswer:
        await asyncio.sleep(0)
        return GateAnswer(selections=(("2",),))

    assert await JsonlSink(io.StringIO(), answer=later).ask(QUESTION_GATE) == GateAnswer(selections=(("2",),))


async def test_jsonl_without_callback_waits_until_withdrawn() -> None:
    sink = JsonlSink(io.StringIO())
    ask = asyncio.ensure_future(sink.ask(QUESTION_GATE))
    await asyncio.sleep(0.02)
    assert not ask.done()
    await sink.withdraw(QUESTION_GATE.gate_id)
    with pytest.raises(asyncio.CancelledError):
        await ask


async def test_an_empty_closing_delta_after_an_interruption_prints_no_empty_line() -> None:
    from rich.console import Console

    from agy_harness.adapters.sinks.terminal import TerminalSink
    from agy_harness.ports.events import AssistantMessage, Notice, TextDelta

    console = Console(record=True, width=80, file=__import__("io").StringIO())
    sink = TerminalSink(console)
    await sink.deliver(
        [
            TextDelta(id="m/0", cascade_id="c", delta="The keeper", message_id="m", index=0),
            Notice(id="n", cascade_id="c", text="cancelled the running steps"),
            TextDelta(id="m/1", cascade_id="c", delta="", message_id="m", index=1, final=True),
            AssistantMessage(id="m/a", cascade_id="c", text="The keeper", message_id="m"),
        ]
    )
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert "◆" not in lines and lines.count("◆ The keeper") == 1


@pytest.mark.parametrize("target", [False, True])
async def test_a_look_alike_directory_or_path_is_flagged_on_the_terminal_card(target: bool) -> None:
    """The working directory (and a gate's path) carries the look-alike flags (core.display.path_notes):
    a Cyrillic "і" (U+0456) and the ASCII "i" render two visibly different cards, the note naming U+0456."""
    cards = []
    for where in ("/srv/wiki", "/srv/w\u0456ki"):
        p = PERMISSION_GATE.permission
        assert p is not None
        update = {"target": where, "command_line": ""} if target else {"cwd": where}
        gate = PERMISSION_GATE.model_copy(update={"permission": p.model_copy(update=update)})
        c = console()
        sink = TerminalSink(c, input_fn=scripted("n"))
        assert await asyncio.wait_for(sink.ask(gate), 30) == GateAnswer(allow=False)
        cards.append(text_of(c))
    plain, odd = cards
    assert plain != odd and "U+0456" not in plain and "⚠" not in plain
    assert "U+0456" in odd and "CYRILLIC SMALL LETTER" in odd


async def test_a_question_flags_its_look_alike_options_on_the_terminal_card() -> None:
    """A question's options ``github.com`` / ``gіthub.com`` (Cyrillic U+0456) and its text carry the
    look-alike flags (core.display.label_notes) under them; the ASCII option has none, and typing
    2 picks the look-alike option (its id)."""
    first, second = QUESTION_GATE.questions
    options = (first.options[0].model_copy(update={"text": "github.com"}),
               first.options[1].model_copy(update={"text": "g\u0456thub.com"}))  # fmt: skip
    odd = first.model_copy(update={"question": "Clone from g\u0456thub.com?", "options": options})
    gate = QUESTION_GATE.model_copy(update={"questions": (odd, second)})
    c = console()
    sink = TerminalSink(c, input_fn=scripted("2", "1"))
    answer = await asyncio.wait_for(sink.ask(gate), 30)
    assert answer.selections == (("2",), ("1",))
    lines = text_of(c).splitlines()
    at = next(i for i, line in enumerate(lines) if "2) g\u0456thub.com" in line)
    assert "U+0456" in lines[at + 1] and "CYRILLIC SMALL LETTER" in lines[at + 1]
    plain = next(i for i, line in enumerate(lines) if "1) github.com" in line)
    assert "⚠" not in lines[plain + 1]
    question = next(i for i, line in enumerate(lines) if "Clone from" in line)
    assert "U+0456" in lines[question + 1]
