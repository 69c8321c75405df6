"""Ctrl-C, as the banners say to press it, ends ``sim`` and ``record`` cleanly, exit 130 (#23 item 5);
``record`` shows its progress and ``sim`` the next step (item 11)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Terminal, cli
from .test_attach_terminal import start_sim


def test_sim_says_what_to_do_next_and_exits_130_on_ctrl_c(terminal: Terminal) -> None:
    pane = terminal.run(cli("sim", "--pace", "0"))
    pane.wait("next, in another terminal (Ctrl-C stops the simulator):\n  agy-harness attach --port ")
    pane.key("C-c")
    assert pane.wait_exit(20) == 130
    assert "Traceback" not in pane.screen()


def test_record_stopped_with_ctrl_c_keeps_its_closing_snapshot_and_summary(
    terminal: Terminal, tmp_path: Path
) -> None:
    cascade = start_sim(terminal, "--scenario", "hello")
    out = tmp_path / "session.jsonl"
    pane = terminal.run(cli("record", "--cascade", cascade, "--out", str(out)))
    pane.wait("until Ctrl-C")
    pane.wait("recording · 1 frame(s)")  # progress, redrawn in place
    pane.key("C-c")
    assert pane.wait_exit(20) == 130
    screen = pane.screen()
    assert "agy-harness record: 1 frame(s) and 2 snapshots written to" in screen
    assert "Traceback" not in screen and "recording ·" not in pane.visible()[-2]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert list(lines[0]) == ["steps"] and list(lines[-1]) == ["steps"]  # the closing snapshot
    assert lines[-1]["steps"] and len(lines) == 3


def test_record_to_stdout_pipes_into_replay(terminal: Terminal) -> None:
    """The README's ``agy-harness record --seconds 30 --out - | agy-harness replay -``."""
    cascade = start_sim(terminal, "--scenario", "hello")
    record = cli("record", "--cascade", cascade, "--seconds", "1", "--out", "-")
    pane = terminal.run(f'{record} | {cli("replay", "-")} | grep -c \'"type": "assistant_message"\'')
    assert pane.wait_exit(30) == 0
    screen = pane.screen()
    assert "-> stdout, for 1 s" in screen and "written to stdout" in screen
    assert "\n1\n" in screen  # the greeting, replayed from the recording


def test_the_board_stopped_with_ctrl_c_leaves_the_shell_on_a_new_line(terminal: Terminal) -> None:
    pane = terminal.run(cli("board", "--sim", "--sim-pace", "0"))
    pane.wait("(Ctrl-C stops it)", 60)
    pane.key("C-c")
    assert pane.wait_exit(30) == 130  # (EXIT= at the start of a line: not after the echoed ^C)
    assert "agy board stopped" in pane.screen() and "Traceback" not in pane.screen()
