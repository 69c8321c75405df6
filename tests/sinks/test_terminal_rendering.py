"""The terminal sink's rendering: markdown as it streams, readable tool cards and diffs, the one keyboard."""

from __future__ import annotations

import asyncio
import io
import json
import random
import threading

from rich.console import Console
from rich.text import Text

from agy_harness.adapters.sinks.keyboard import Keyboard
from agy_harness.adapters.sinks.markdown_stream import MarkdownStream, render_markdown
from agy_harness.adapters.sinks.terminal import TerminalSink, humane
from agy_harness.ports.events import (
    AssistantMessage,
    Notice,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolResult,
)

C = "c1"
MARKDOWN = (
    "# Plan\n**Summarising the results**\n\nAll *done*: run `rm -rf build` now; snake_case_name stays.\n"
    "- one\n- **two** items\n```python\nx = 1 * 2\n```\n> quoted __strong__ end"
)


def console() -> Console:
    return Console(record=True, width=100, color_system=None, force_terminal=False, file=io.StringIO())


def test_markdown_is_rendered_not_shown() -> None:
    text = render_markdown(MARKDOWN)
    assert text.plain == (
        "Plan\nSummarising the results\n\nAll done: run rm -rf build now; snake_case_name stays.\n"
        "• one\n• two items\nx = 1 * 2\n│ quoted strong end"
    )
    styles = {text.plain[s.start : s.end]: str(s.style) for s in text.spans}
    assert styles["Summarising the results"] == "bold"
    assert styles["done"] == "italic"
    assert styles["rm -rf build"] == "cyan"
    assert styles["x = 1 * 2"] == "cyan"


def styles_of(text: Text) -> list[str]:
    """The style of every character (pieces of one span may be split differently)."""
    out = [""] * len(text.plain)
    for span in text.spans:
        for i in range(span.start, span.end):
            out[i] = " ".join(sorted({*out[i].split(), *str(span.style).split()}))
    return out


def test_markdown_streamed_in_any_pieces_renders_the_same() -> None:
    whole = render_markdown(MARKDOWN)
    for seed in range(100):
        rng = random.Random(seed)
        stream, out, i = MarkdownStream(), Text(), 0
        while i < len(MARKDOWN):
            n = rng.randint(1, 7)
            out.append_text(stream.feed(MARKDOWN[i : i + n]))
            i += n
        out.append_text(stream.flush())
        assert out.plain == whole.plain, seed
        assert styles_of(out) == styles_of(whole), seed


def card(event: ToolCall | ToolResult, *, call: ToolCall | None = None) -> str:
    c = console()
    events: list[ToolCall | ToolResult] = [call, event] if call is not None else [event]
    asyncio.run(TerminalSink(c).deliver(events))
    return c.export_text()


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=f"t/{name}", cascade_id=C, call_id=f"t/{name}", name=name, arguments=arguments)


def result(name: str, output: str) -> ToolResult:
    return ToolResult(id=f"t/{name}/r", cascade_id=C, call_id=f"t/{name}", name=name, output=output)


def test_file_tools_show_their_paths_and_results_not_json() -> None:
    out = card(call("view_file", AbsolutePath="/repo/package.json", StartLine=1, EndLine=40))
    assert "/repo/package.json  (lines 1-40)" in out and "AbsolutePath" not in out
    listing = {"results": [{"name": "src", "isDir": True}, {"name": "README.md", "sizeBytes": "10"}]}
    out = card(result("list_dir", json.dumps(listing)))
    assert "src/" in out and "README.md" in out and "2 entries" in out and "{" not in out
    out = card(result("view_file", json.dumps({"numLines": 111, "numBytes": 3609})))
    assert "read 111 lines · 3,609 bytes" in out


def test_a_question_card_shows_the_question_and_options_and_the_choice() -> None:
    q = {"question": "Which part first?", "options": ["The core.", "The tests."], "is_multi_select": False}
    out = card(call("ask_question", questions=[q]))
    assert "Which part first?" in out and "1) The core." in out and "2) The tests." in out
    assert '"question"' not in out
    answered = {
        "questions": [
            {
                "question": "Which part first?",
                "options": [{"id": "1", "text": "The core."}, {"id": "2", "text": "The tests."}],
                "selectedOptionIds": ["2"],
            }
        ]
    }
    assert "→ The tests." in card(result("ask_question", json.dumps(answered)))


def test_edits_show_as_diffs() -> None:
    out = card(
        call(
            "replace_file_content",
            TargetFile="/repo/app.py",
            ReplacementChunks=[{"TargetContent": "x = 1\ny = 2\n", "ReplacementContent": "x = 1\ny = 3\n"}],
        )
    )
    assert "/repo/app.py" in out and "-y = 2" in out and "+y = 3" in out and " x = 1" in out
    out = card(call("write_to_file", TargetFile="/repo/new.txt", CodeContent="hello\nworld\n"))
    assert "/repo/new.txt" in out and "+hello" in out and "+world" in out


def test_long_arguments_are_cut_at_a_word() -> None:
    out = card(call("search_web", query="lighthouse " * 40))
    assert "lighthouse …" in out and "lighthou…" not in out


def test_crlf_output_is_lines_and_other_controls_stay_visible() -> None:
    out = card(result("run_command", "On branch main\r\nclean\r\n\x1b[2Jgone?"))
    rows = [row.strip("│ ") for row in out.splitlines()]
    assert "On branch main" in rows and "clean" in rows
    assert "\\r" not in out and "\\x1b[2J" in out  # a CRLF is a line end; an escape is still shown


def test_a_progress_line_redrawn_with_bare_crs_shows_its_last_state_as_a_terminal_does() -> None:
    """Issue 47 (the board's rule, core/carriage.py, on the terminal too): fails before (``\\rDown…``)."""
    out = card(result("run_command", "get\r\nDownloading  10%\rDownloading 100%\r\ndone\r\n"))
    rows = [row.strip("│ ") for row in out.splitlines()]
    assert "Downloading 100%" in rows and "\\r" not in out and "10%" not in out


def test_no_internal_ids_in_notices() -> None:
    gate = "2e9d93ee-d22a-4df0-907e-e8ff5c590f6d/da18ba41-6b2f-4b28-b55a-f8b0404b39a6/10"
    assert humane(f"gate {gate} is gone; the answer was not delivered") == (
        "the gate is gone; the answer was not delivered"
    )
    c = console()
    note = Notice(id="n/1", cascade_id=C, level="warning", text=f"cancelled; denied the parked gate {gate}")
    asyncio.run(TerminalSink(c).deliver([note]))
    assert "2e9d93ee" not in c.export_text()


def test_a_reply_continued_after_a_notice_gets_no_second_diamond() -> None:
    c = console()
    sink = TerminalSink(c)
    events = [
        TextDelta(id="m/d0", cascade_id=C, delta="The lighthouse ", message_id="m", index=0),
        Notice(id="n/1", cascade_id=C, text="cancelled the running steps"),
        TextDelta(id="m/d1", cascade_id=C, delta="keeper slept.", message_id="m", index=1),
        AssistantMessage(id="m/text", cascade_id=C, text="The lighthouse keeper slept.", message_id="m"),
    ]
    asyncio.run(sink.deliver(events))
    out = c.export_text()
    assert out.count("◆") == 1 and "keeper slept." in out and out.count("lighthouse") == 1


def test_one_keyboard_gives_each_line_to_the_newest_reader() -> None:
    lines = ["run: git status\n", "y\n", "next turn\n", ""]
    feed = threading.Semaphore(0)

    def readline() -> str:
        feed.acquire()
        return lines.pop(0)

    async def main() -> tuple[str | None, str | None, str | None, str | None]:
        kb = Keyboard(readline=readline)
        turn = asyncio.create_task(kb.read())
        await asyncio.sleep(0)
        feed.release()
        first = await turn
        turn = asyncio.create_task(kb.read())  # the turn loop waits...
        await asyncio.sleep(0.01)
        gate = asyncio.create_task(kb.read(fresh=True))  # ...a gate opens: it gets the next line
        await asyncio.sleep(0.01)
        feed.release()
        answer = await gate
        assert not turn.done()
        feed.release()
        second = await turn
        feed.release()
        end = await kb.read()
        return first, answer, second, end

    assert asyncio.run(main()) == ("run: git status", "y", "next turn", None)


def test_a_line_typed_before_a_gate_never_answers_it() -> None:
    lines = ["y\n", "n\n"]

    async def main() -> str | None:
        kb = Keyboard(readline=lambda: lines.pop(0) if lines else "")
        assert await kb.read() == "y"  # a turn read it...
        await asyncio.sleep(0.05)  # ...and the thread read "n" while nobody asked
        return await kb.read(fresh=True)  # a gate opens now: "n" was typed before it, not an answer

    assert asyncio.run(main()) is None  # the next real input (here: end of input) is the answer


def thought(*pieces: str, then: ToolCall | None = None) -> str:
    """What the sink shows of a thought streamed in ``pieces``, closed by ``then`` (a tool call)."""
    c = console()
    deltas = [
        ReasoningDelta(id=f"r/{i}", cascade_id=C, delta=p, message_id="m1", index=i, started=i == 0)
        for i, p in enumerate(pieces)
    ]
    asyncio.run(TerminalSink(c).deliver([*deltas, then or call("run_command", CommandLine="pwd")]))
    return c.export_text()


def test_a_thought_whose_end_was_never_seen_ends_in_an_ellipsis() -> None:
    """agy drops a finished planner's thinking: polled (1.0.4), its last words can be missed, and the
    screen showed "thinking Running a command / I" as if it were whole (#23 item 2)."""
    assert "thinking Summarising\n\nAll the tools finished; I will …\n" in thought(
        "**Summarising**\n\n", "All the tools finished; I will "
    )
    whole = thought("**Summarising**\n\n", "All the tools finished; I will report what happened.")
    assert "report what happened.\n" in whole and "…" not in whole


def test_a_typed_answer_is_shown_in_the_result_card() -> None:
    """The card read ``freeformResponse``; the core sends, and agy keeps, ``writeInResponse``."""
    answered = {
        "questions": [
            {
                "question": "Which part first?",
                "options": [{"id": "1", "text": "The core."}],
                "writeInResponse": "Just the README, please",
            }
        ]
    }
    out = card(result("ask_question", json.dumps(answered)))
    assert "→ Just the README, please" in out and "(skipped)" not in out


def test_streamed_text_is_word_wrapped_and_its_column_known() -> None:
    from agy_harness.adapters.sinks.terminal_screen import StreamWrap

    wrap, out = StreamWrap(20, col=2), Text()
    for piece in ["The light", "house keeper climbed", " the stairs at du", "sk.\n  indented line"]:
        out.append_text(wrap.feed(Text(piece)))
    out.append_text(wrap.flush())
    assert out.plain == "The lighthouse\nkeeper climbed the\nstairs at dusk.\n  indented line"
    assert wrap.col == len("  indented line")
    assert all(len(row) < 20 for row in ("  " + out.plain).splitlines())


def test_the_line_editor_keys() -> None:
    from agy_harness.adapters.sinks.line_editor import END, LineBuffer

    line = LineBuffer()
    assert line.feed("run: git statsu\x7f\x7fus") == [] and line.text == "run: git status"
    assert line.feed("\x17") == [] and line.text == "run: git "  # Ctrl-W: the last word
    assert line.feed("\x1b[A\x1b[1;5Clog\x1bb") == [] and line.text == "run: git log"  # keys ignored
    assert line.feed("\r") == ["run: git log"] and line.text == ""
    assert line.feed("half\x15") == [] and line.text == ""  # Ctrl-U
    assert line.feed("x\x04") == [] and line.feed("\x7f\x04") == [END]  # Ctrl-D only on an empty line


def test_a_thought_cut_by_a_gate_ends_on_its_own_line() -> None:
    """The ellipsis came after the gate's card, on a line of its own ("I" / card / "  …")."""
    from agy_harness.ports.events import GateOpened, PermissionRequest

    c = console()
    sink = TerminalSink(
        c, auto_answer=lambda _g: __import__("agy_harness").ports.protocols.GateAnswer(allow=False)
    )
    gate = GateOpened(
        id="g", cascade_id=C, gate_id="g1", kind="permission", trajectory_id="t", step_index=3,
        tool_name="run_command", permission=PermissionRequest(command_line="ls"),
    )  # fmt: skip

    async def play() -> None:
        await sink.deliver(
            [ReasoningDelta(id="r", cascade_id=C, delta="I", message_id="m", index=0, started=True)]
        )
        await sink.ask(gate)
        await sink.deliver([call("run_command", CommandLine="ls")])

    asyncio.run(play())
    out = c.export_text()
    assert "thinking I …\n" in out and "\n  …" not in out
