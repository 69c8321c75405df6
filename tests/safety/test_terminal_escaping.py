"""Finding 3: agy-controlled text never reaches the terminal as a control sequence; the approval card
shows the exact command line agy will run."""

from __future__ import annotations

import asyncio
import io
import json
import os
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.sinks.escape import visible, visible_value
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import ToolResult
from tests.integration.helpers import FAST
from tests.sinks.samples import SAMPLES

HOSTILE = (
    "\x1b]0;pwned\x07"  # OSC title
    "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52 clipboard write
    "\x1b[2J\x1b[H"  # clear screen, home
    "\x1b[?1049h"  # alternate screen
    "\x1bPq#0;2;0;0;0\x1b\\"  # DCS
    "\x9b2K"  # C1 CSI erase line
    "\u202etxt.exe"  # bidi override
    "\r\x08\x07\x00\x7f"
    "\ud800"  # lone surrogate
)
RAW = ["\x1b", "\x9b", "\x07", "\x08", "\x00", "\x7f", "\r", "\u202e", "\ud800"]


def recording_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(width=200, color_system=None, force_terminal=False, file=out, soft_wrap=True), out


def poison(value: Any) -> Any:
    if isinstance(value, str):
        return value + HOSTILE
    if isinstance(value, dict):
        return {poison(k): poison(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(poison(v) for v in value)
    return value


def test_visible_shows_every_control() -> None:
    assert visible("ls\x1b[2K\r$ rm") == "ls\\x1b[2K\\r$ rm"
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\u202e\ud800\x9b\u2028") == "\\u202e\\ud800\\x9b\\u2028"
    # a ZWJ is shown too (issue #26: invisible characters made two commands render alike)
    assert visible("emoji 👩\u200d💻 ünïcödé") == "emoji 👩\\u200d💻 ünïcödé"
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    assert "nested deeper than" in str(visible_value(deep))


def _one_at_a_time(text: str) -> str:
    """The rendering rule character by character: each character as :func:`visible` shows it alone,
    a backslash doubled where the character after it would read as (the start of) an escape."""
    out = []
    for i, char in enumerate(text):
        after = text[i + 1 : i + 2]
        if char == "\\":
            out.append("\\\\" if after and (after in "\\xuUrvf" or visible(after) != after) else "\\")
        else:
            out.append(visible(char))
    return "".join(out)


@given(
    st.lists(
        st.sampled_from(["x" * 15, "x" * 16, "ab" * 20, "\\", "é", "\x1b", "\u202e", "u", "\n"]), max_size=12
    )
)
def test_long_plain_runs_are_shown_as_every_character_is(pieces: list[str]) -> None:
    """visible skips long runs of plain characters whole: what it shows is still the rule applied to
    every character, a backslash before such a run included (``é\\`` then ``xxx...``: doubled)."""
    text = "".join(pieces)
    assert visible(text) == _one_at_a_time(text)


async def test_every_event_type_is_rendered_without_raw_controls() -> None:
    console, out = recording_console()
    answers = iter(["n", "1", "1"])
    sink = TerminalSink(console, input_fn=lambda _p: next(answers))
    for sample in SAMPLES:
        literal = ("type", "status", "level", "kind")  # closed vocabularies, not agy text
        hostile = sample.model_copy(
            update={k: poison(getattr(sample, k)) for k in type(sample).model_fields if k not in literal}
        )
        if hostile.type == "gate_opened":
            await sink.ask(hostile)  # type: ignore[arg-type]
        else:
            assert await sink.deliver([hostile]) == 1
    sink.info("narration" + HOSTILE)
    text = out.getvalue()
    assert not [c for c in RAW if c in text], [c for c in RAW if c in text]
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in text and "\\u202etxt.exe" in text


async def test_the_approval_card_shows_the_exact_command_agy_will_run() -> None:
    command = "rm -rf ~/work\x1b[2K\r$ ls -la"
    console, out = recording_console()
    sink = TerminalSink(console, input_fn=lambda _p: "n")
    async with Simulator(pace=0.02, gate_timeout=None) as sim:
        async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
            await s.send(f"run: `{command}`")
            for _ in range(300):
                if any(
                    x["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
                    and x["status"] != "CORTEX_STEP_STATUS_WAITING"
                    for x in sim.steps()
                ):
                    break
                await asyncio.sleep(0.05)
        [step] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
    # what agy asked to run (and did not: the human saw all of it and said no)
    assert step["completedInteractions"][0]["request"]["permission"]["resource"]["target"] == command
    assert step["status"] != "CORTEX_STEP_STATUS_DONE"
    text = out.getvalue()
    assert "$ rm -rf ~/work\\x1b[2K\\r$ ls -la" in text  # the whole command, its controls visible
    assert "\x1b" not in text and "\r" not in text


async def test_json_escapes_in_a_tool_output_stay_neutralised_in_its_card() -> None:
    """A tool card decodes JSON output (a directory listing, a file read, answered questions): agy's
    ``\\u001b`` escapes become control characters again there and must be shown, not sent."""
    console, out = recording_console()
    sink = TerminalSink(console)
    listing = {"results": [{"name": "notes" + HOSTILE, "isDir": True}, {"name": "a.py"}]}
    event = ToolResult(
        id="t/4/result",
        cascade_id="c",
        step_key="t/4",
        call_id="t/4",
        name="list_dir",
        output=json.dumps(listing),
    )
    assert await sink.deliver([event]) == 1
    text = out.getvalue()
    assert not [c for c in RAW if c in text], [c for c in RAW if c in text]
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in text
