"""``agy-harness attach`` in a terminal, next to ``agy-harness sim`` in another (#16 findings 3-6, 10).

Both run as a person runs them, each in a tmux pane of the test's own; attach finds the simulator by
itself (no --port), the test types turns, gate answers, /interrupt, Ctrl-D and Ctrl-C and reads the
screen.
"""

from __future__ import annotations

import re

import pytest

from agy_harness.core.display import request_hash

from .conftest import UUID, Pane, Terminal, cli

GIT_STATUS = request_hash("git status")  # the hash every card of a command ends in


def start_sim(terminal: Terminal, *args: str) -> str:
    sim = terminal.run(cli("sim", "--pace", "0.05", *args))
    screen = sim.wait(lambda s: re.search(r"^cascade \S+$", s, re.M) is not None)
    match = re.search(r"^cascade (\S+)$", screen, re.M)
    assert match is not None
    return match.group(1)


def attach(terminal: Terminal, cascade: str, *args: str) -> Pane:
    pane = terminal.run(cli("attach", "--cascade", cascade, *args))
    pane.wait("Ctrl-D detaches")
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])  # the prompt, waiting for a turn
    return pane


@pytest.fixture
def cascade(terminal: Terminal) -> str:
    return start_sim(terminal)


def test_a_gate_answer_never_becomes_a_turn_and_ctrl_c_exits(terminal: Terminal, cascade: str) -> None:
    pane = attach(terminal, cascade)
    pane.type("run: git status")
    pane.wait("allow? [y/n]")
    pane.type("y")  # one press: the gate's prompt has the keyboard
    screen = pane.wait("○ idle")
    assert "→ allow" in screen and "nothing to commit, working tree clean" in screen
    # the retired card says who answered it and where (issue #36)
    assert re.search(r"· allowed by you on the terminal \(attach\), \d\d:\d\d", screen), screen
    assert "❯ y" not in screen and screen.count("❯ run: git status") == 1
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])  # the prompt is back after the turn
    assert not UUID.search(pane.screen())  # no internal ids on screen
    pane.key("C-c")
    assert pane.wait_exit(20) == 130
    assert "Traceback" not in pane.screen()


def test_interrupt_is_reported_once(terminal: Terminal, cascade: str) -> None:
    pane = attach(terminal, cascade)
    pane.type("Write a long story about a lighthouse keeper.")
    pane.wait("◆ ")
    pane.type("/interrupt")
    pane.wait("cancelled the running steps")
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])  # the prompt is back: attach reported all
    assert pane.screen().count("cancelled the running steps") == 1
    assert "The lighthouse keeper" in pane.screen()  # what streamed before the interrupt stays
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_declining_a_question_with_ctrl_d_goes_on(terminal: Terminal, cascade: str) -> None:
    pane = attach(terminal, cascade)
    pane.type("ask: which part should we work on first?")
    pane.wait("answer (1-3")
    pane.key("C-d")  # end of input at the question: declined, agy gets its skip signal
    screen = pane.wait("○ idle", 30)
    assert "→ cancelled" in screen and "You skipped the question" in screen
    assert "input not registered" not in screen and "HTTP 500" not in screen
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    pane.type("/decline")  # not a gate now: an unknown command, not a turn
    pane.wait("unknown command /decline")
    pane.key("C-d")  # Ctrl-D at the prompt detaches
    assert pane.wait_exit(20) == 0
    assert "detached" in pane.screen()


def test_log_lines_never_land_in_a_prompt(terminal: Terminal) -> None:
    sim = terminal.run(cli("sim", "--pace", "0.05"))
    screen = sim.wait(lambda s: re.search(r"^cascade \S+$", s, re.M) is not None)
    match = re.search(r"^cascade (\S+)$", screen, re.M)
    assert match is not None
    pane = terminal.run(cli("-v", "attach", "--cascade", match.group(1)))  # logs reach the screen with -v
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    pane.type("run: git status")
    pane.wait("allow? [y/n]")
    sim.key("C-c")  # agy goes away while the gate waits: the harness logs warnings
    pane.wait("WARNING", 30)
    prompt = f"$ git status {GIT_STATUS} · allow? [y/n]"
    pane.wait(lambda _s: pane.visible()[-1:] == [prompt], 10)  # the prompt, redrawn last
    rows = pane.screen().splitlines()
    assert any("WARNING" in row for row in rows)
    assert all(row == prompt or "allow? [y/n]" not in row for row in rows)  # never mixed
    pane.key("C-c")
    assert pane.wait_exit(20) == 130


def test_an_old_agy_without_tmux_says_what_to_pass(terminal: Terminal) -> None:
    cascade = start_sim(terminal, "--profile", "1.0.4")
    pane = attach(terminal, cascade)
    assert "pass --tmux PANE" in pane.screen()
    pane.type("Say hello in one short sentence.")
    pane.wait(lambda s: s.count("pass --tmux PANE") >= 2)
    assert "Traceback" not in pane.screen() and "EXIT=" not in pane.screen()  # still attached
    pane.key("C-d")
    assert pane.wait_exit(20) == 0
