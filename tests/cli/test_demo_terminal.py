"""``agy-harness demo`` in a terminal, answered by keys (#16 findings 1, 2, 5, 10, 12 and the status line).

Every test runs the real command in a tmux pane of its own, types as a person would and reads the
screen.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect

from .conftest import UUID, Terminal, cli

SPINNER_LINE = re.compile(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (thinking|writing|working|running [a-z_ ]+) · \d+s")


def no_internals(screen: str) -> None:
    assert "Traceback" not in screen
    assert not UUID.search(screen), UUID.search(screen)  # no internal ids on screen
    assert "MODEL_PLACEHOLDER" not in screen  # the model's display name, not its id
    assert "**" not in screen  # markdown rendered, not shown


def test_the_interactive_demo_answered_by_keys(terminal: Terminal) -> None:
    pane = terminal.run(cli("demo", "--pace", "0.05"))
    pane.wait("allow? [y/n]")
    pane.type("y")
    screen = pane.wait("→ allow")
    pane.wait("allow? [y/n]", after=screen.index("→ allow"))
    pane.type("maybe", enter=False)
    time.sleep(1.0)  # what the human is typing stays on screen while agy's status ticks
    assert pane.visible()[-1].endswith(" · allow? [y/n] maybe")  # the command's first line, then the prompt
    pane.key("Enter")  # not an answer: asked again, nothing sent
    pane.wait("please answer y (allow), n (deny)")
    pane.type("n")
    pane.wait("answer (1-3, or type an answer)")
    pane.type("2")
    assert pane.wait_exit(90) == 0
    screen = pane.screen()
    no_internals(screen)
    for text in (
        "→ allow",
        "→ deny",
        "→ Start with the tests.",
        "$ git status",  # the run_command card: the command, its cwd, its output
        "in /home/agy/.gemini/antigravity-cli/scratch",
        "nothing to commit, working tree clean",
        "Which part should we work on first?",  # the question card: question and options
        "3) Start with the documentation.",
        "Summarising the results",  # thinking's **heading**, rendered
        "I will run rm -rf build in the workspace.",  # a tool call's thinking, not cut off
        "Gemini 3 Pro",
        "demo done",
    ):
        assert text in screen, text
    assert "\\r" not in screen  # CRLF output shown as lines
    # the interrupted story: one ◆, the cancel notice after it, no second ◆ for the same reply
    story = screen[screen.index("❯ Write a long story") :]
    assert story.count("◆") == 1 and "cancelled the running steps" in story


def test_a_gate_waits_for_the_human_longer_than_the_idle_limit(terminal: Terminal) -> None:
    # the limit is 10 s, not less: agy's own steps must never take that long, even on a machine at load 10
    # (at 2 s the simulator's step after the answer tripped it there); the human's wait is longer still
    pane = terminal.run(cli("demo", "--pace", "0.05", "--idle-limit", "10"))
    pane.wait("allow? [y/n]")
    time.sleep(12)  # the human thinks longer than the limit; agy is waiting, not stuck
    assert "EXIT=" not in pane.screen() and "TimeoutError" not in pane.screen()
    pane.type("y")
    screen = pane.wait("→ allow")
    pane.wait("allow? [y/n]", after=screen.index("→ allow"))
    pane.type("n")
    pane.wait("answer (1-3")
    pane.type("1")
    assert pane.wait_exit(90) == 0
    assert "Traceback" not in pane.screen()


def test_declining_a_question_and_ctrl_d_at_a_gate(terminal: Terminal) -> None:
    pane = terminal.run(cli("demo", "--pace", "0.05"))
    pane.wait("allow? [y/n]")
    pane.key("C-d")  # end of input at a permission: cancelled (refused), the demo goes on
    screen = pane.wait("→ cancelled")
    pane.wait("allow? [y/n]", after=screen.index("→ cancelled"))
    pane.type("/decline")
    screen = pane.wait("→ declined")
    pane.wait("answer (1-3", after=screen.index("→ declined"))
    pane.type("/decline")
    assert pane.wait_exit(90) == 0
    screen = pane.screen()
    assert "You skipped the question" in screen  # agy got its skip signal and went on
    assert "input not registered" not in screen and "HTTP 500" not in screen
    no_internals(screen)


def test_ctrl_c_exits_130_without_a_traceback(terminal: Terminal) -> None:
    pane = terminal.run(cli("demo", "--pace", "0.05"))
    pane.wait("allow? [y/n]")
    pane.key("C-c")
    assert pane.wait_exit(30) == 130
    screen = pane.screen()
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen
    assert "agy-harness: interrupted" in screen


def test_a_status_line_shows_while_agy_works(terminal: Terminal) -> None:
    pane = terminal.run(cli("demo", "--pace", "1.5"))

    def status_shown(_screen: str) -> bool:
        rows = pane.visible()
        return bool(rows) and bool(SPINNER_LINE.search(rows[-1])) and "Gemini 3 Pro" in rows[-1]

    pane.wait(status_shown, 60)
    pane.key("C-c")
    assert pane.wait_exit(30) == 130
    rows = pane.visible()
    assert "agy-harness: interrupted" in rows  # the status line was cleared, not left under it
    assert not any(SPINNER_LINE.search(row) for row in rows)


def test_the_old_profile_demo_types_turns_through_tmux(terminal: Terminal) -> None:
    pane = terminal.run(cli("demo", "--profile", "1.0.4", "--auto", "--pace", "0.05"))
    assert pane.wait_exit(120) == 0
    screen = pane.screen()
    assert "typed into its pane" in screen
    assert "agy 1.0.4: polls its steps (this agy has no stream), takes turns only in its terminal" in screen
    assert "❯ Say hello in one short sentence." in screen and "demo done" in screen
    assert "Traceback" not in screen and "no turn sender" not in screen


def test_the_old_profile_demo_says_what_to_install_without_tmux(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()  # a PATH without tmux
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agy_harness.composition.cli", "demo", "--profile", "1.0.4", "--auto"],
        env={**os.environ, "PATH": str(bare)},
        encoding="utf-8",
        timeout=60,
    )
    child.expect(pexpect.EOF)
    child.close()
    out = child.before
    assert child.exitstatus == 1
    assert "Traceback" not in out
    assert "Install tmux" in out and "apt-get install tmux" in out and "--profile 1.0.10" in out


def test_no_color_turns_colour_off(tmp_path: Path) -> None:
    def run(env: dict[str, str]) -> str:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "agy_harness.composition.cli", "demo", "--auto", "--pace", "0"],
            env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, "TERM": "xterm-256color", **env},
            encoding="utf-8",
            timeout=90,
            dimensions=(50, 120),
        )
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        return str(child.before)

    colour = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|9[0-7]|38;[25];[0-9;]+)m")
    assert colour.search(run({}))  # a terminal gets colour...
    assert not colour.search(run({"NO_COLOR": "1"}))  # ...unless NO_COLOR is set


def test_sigterm_cleans_up_the_demo_and_its_tmux(tmp_path: Path) -> None:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agy_harness.composition.cli", "demo", "--profile", "1.0.4", "--pace", "0.05"],
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 160),
    )
    child.expect(r"tmux -L (\S+)")
    socket = child.match.group(1)
    child.expect(r"allow\? \[y/n\]")
    child.kill(15)  # SIGTERM, as a service manager or a closed terminal (SIGHUP) would
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 143 and "Traceback" not in str(child.before)
    alive = subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True, text=True)
    assert alive.returncode != 0  # the demo's own tmux server (and agy's TUI in it) is gone
