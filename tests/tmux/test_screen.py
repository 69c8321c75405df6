"""Pure parts of the tmux turn sender: the text check and the screen predicates."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator.tui import render_screen
from agy_harness.adapters.tmux import (
    agy_composer,
    agy_ready,
    default_composer,
    default_ready,
    sim_composer,
    sim_ready,
    turn_text,
)

RULE = "─" * 40


def test_turn_text_refuses_controls_keeps_newline_and_tab() -> None:
    assert turn_text("a\tb\r\nc\rd;\\;") == "a\tb\nc\nd;\\;"
    for raw in ("a\x1b[201~b", "b\x00c", "c\x07", "f\x7fg", "g\x9bh", "x\ud800y", "  \n "):
        with pytest.raises(ValueError, match="nothing was typed"):
            turn_text(raw)


def test_turn_text_keeps_unicode() -> None:
    assert turn_text("héllo · wörld ✦ 𝄞 👩\u200d💻") == "héllo · wörld ✦ 𝄞 👩\u200d💻"


def test_sim_ready_only_on_idle_footer() -> None:
    assert sim_ready(["› hi", RULE, "> ", "agy 1.0.10 · idle", "", ""])
    assert not sim_ready(["› hi", RULE, "> ", "agy 1.0.10 · working"])
    assert not sim_ready(["› hi", RULE, "> ", "agy 1.0.10 · waiting for approval"])
    assert not sim_ready([])


def test_sim_composer_reads_multi_line_composer() -> None:
    screen = ["› earlier", RULE, "> first line", "  second", "agy 1.0.10 · idle"]
    assert sim_composer(screen) == "first line\nsecond"
    assert sim_composer(["› x", RULE, ">", "agy 1.0.10 · idle"]) == ""
    assert sim_composer(["no footer here"]) is None


def test_screen_of_the_simulated_tui_parses_back() -> None:
    # The TUI's own rendering and the sender's reading of it agree.
    lines = render_screen([], "one\ntwo", "idle", "1.0.10", 80, 24)
    assert sim_ready(lines)
    assert sim_composer(lines) == "one\ntwo"
    busy = render_screen([], "", "working", "1.0.10", 80, 24)
    assert not sim_ready(busy) and sim_composer(busy) == ""


def test_agy_heuristics() -> None:
    idle = ["╭────╮", "│ > Type your message or @path/to/file │", "╰────╯", "~/src  model"]
    assert agy_ready(idle)
    assert agy_composer(idle) == ""
    busy = ["⠋ Thinking... (esc to cancel, 3s)", "│ > │"]
    assert not agy_ready(busy)
    typed = ["│ > hello there │"]
    assert agy_composer(typed) == "hello there"
    assert default_ready(idle) and not default_ready(busy)
    assert default_composer(["x", RULE, "> hi", "agy 1.0.10 · idle"]) == "hi"
    assert agy_composer(["nothing"]) is None
