"""``agy-harness attach`` as a newcomer sees it, round two (#23 items 1-4, 7, 8).

Everything runs as a person runs it, in tmux panes of the test's own: the simulator (headless or its
TUI) in one, attach in another; the test types and reads the screen.
"""

from __future__ import annotations

import re

from agy_harness.adapters.simulator.scenarios import LONG_TEXT

from .conftest import Pane, Terminal, cli
from .test_attach_terminal import GIT_STATUS, attach, start_sim


def prompt_is(pane: Pane, text: str) -> bool:
    return pane.visible()[-1:] == [text]


def test_a_typed_answer_shows_in_the_questions_result_card(terminal: Terminal) -> None:
    """It showed ``→ (skipped)`` while agy said "You chose: ..." (the card read another field)."""
    pane = attach(terminal, start_sim(terminal))
    assert "attached · agy 1.0.10: streams its steps, takes turns over RPC" in pane.screen()  # not "unknown"
    pane.type("ask: which part should we work on first?")
    pane.wait("answer (1-3")
    pane.type("Just the README, please")
    screen = pane.wait("○ idle")
    assert "You chose: Just the README, please." in screen
    card = screen[screen.index("✓ ask_question") :]
    assert "→ Just the README, please" in card.splitlines()[1]
    assert "(skipped)" not in screen
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_typing_while_a_reply_streams_stays_on_the_bottom_line(terminal: Terminal) -> None:
    """Keys typed during a reply landed inside it ("came close /interruptto the rocks"), the reply was
    cut mid-word at the terminal's edge, and no prompt or status line showed while it streamed."""
    cascade = start_sim(terminal, "--pace", "1")  # (the later --pace wins: a reply of ~6 s)
    pane = terminal.run(cli("attach", "--cascade", cascade), width=70)
    pane.wait(lambda _s: prompt_is(pane, "❯"))
    pane.type("Write a long story about a lighthouse keeper.")
    pane.wait("◆ The lighthouse")
    pane.type("and then a poem", enter=False)
    pane.wait(lambda _s: prompt_is(pane, "❯ and then a poem"), 5)  # below the reply, while it streams
    assert "○ idle" not in pane.screen()  # (the reply was still streaming)
    screen = pane.wait("○ idle", 30)
    reply = screen[screen.index("◆ ") + 2 : screen.index("○ idle")]
    assert reply.split() == LONG_TEXT.split()  # every word whole, nothing typed inside it
    assert all(len(row) < 70 for row in reply.splitlines())
    assert "and then a poem" not in screen[: screen.rindex("❯ and then a poem")]
    pane.key("C-u")  # the line editor clears what was typed
    pane.wait(lambda _s: prompt_is(pane, "❯"), 5)
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_a_log_line_keeps_what_was_being_typed(terminal: Terminal) -> None:
    sim = terminal.run(cli("sim", "--pace", "0.05"))
    screen = sim.wait(lambda s: re.search(r"^cascade \S+$", s, re.M) is not None)
    match = re.search(r"^cascade (\S+)$", screen, re.M)
    assert match is not None
    pane = attach(terminal, match.group(1))
    pane.type("run: git status")
    pane.wait("allow? [y/n]")
    pane.type("ye", enter=False)
    pane.wait(lambda _s: prompt_is(pane, f"$ git status {GIT_STATUS} · allow? [y/n] ye"), 5)
    sim.key("C-c")  # agy goes away: attach says so (its logs need -v) while the human types
    pane.wait("agy is gone", 30)
    pane.wait(
        lambda _s: prompt_is(pane, f"$ git status {GIT_STATUS} · allow? [y/n] ye"), 10
    )  # redrawn with what was typed
    pane.key("C-c")
    assert pane.wait_exit(20) == 130


def test_interrupt_with_agy_idle_says_nothing_was_running(terminal: Terminal) -> None:
    pane = attach(terminal, start_sim(terminal))
    pane.type("/interrupt")
    pane.wait("nothing to interrupt: agy is idle")
    assert "cancelled the running steps" not in pane.screen()
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_the_simulated_tui_is_followed_from_another_pane(terminal: Terminal) -> None:
    """``sim --tui`` opens the simulated agy TUI (1.0.4: turns only at its keyboard); ``attach --tmux
    PANE`` looks for agy in that pane only, though another simulator (1.0.10) runs too."""
    start_sim(terminal)  # another agy, elsewhere
    tui = terminal.run(cli("sim", "--tui", "--profile", "1.0.4", "--pace", "0.05"))
    tui.wait("agy 1.0.4 · idle")
    assert f"agy-harness attach --tmux {tui.pane_id}" in tui.screen()  # it says how to follow it
    pane = terminal.run(cli("attach", "--tmux", tui.pane_id))
    pane.wait(lambda _s: prompt_is(pane, "❯"))
    assert (
        "agy 1.0.4: polls its steps (this agy has no stream), takes turns only in its terminal"
        in pane.screen()
    )
    pane.type("Say hello in one short sentence.")
    pane.wait("◆ Hello!")
    tui.wait("Say hello in one short sentence.")  # typed into agy's own terminal
    pane.key("C-d")
    assert pane.wait_exit(20) == 0
    tui.key("C-c")  # quits the TUI, as in agy
    assert tui.wait_exit(20) == 130


def test_attach_says_what_answers_where(terminal: Terminal) -> None:
    cascade = start_sim(terminal)
    wrong = "11111111-2222-3333-4444-555555555555"
    pane = terminal.run(cli("attach", "--cascade", wrong))
    assert pane.wait_exit(30) == 1
    screen = pane.screen()
    assert f"does not host conversation {wrong}" in screen and "foreign" not in screen
    assert "leave out --cascade" in screen and "Is agy running?" not in screen
    pane = terminal.run(cli("attach", "--port", "1"))
    assert pane.wait_exit(30) == 1
    assert "nothing answers as agy on 127.0.0.1:1" in pane.screen()
    doctor = terminal.run(cli("doctor", "--cascade", cascade))
    assert doctor.wait_exit(30) == 0
    assert "agy version: 1.0.10" in doctor.screen()
