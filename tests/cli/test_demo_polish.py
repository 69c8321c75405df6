"""The demo's polish (issue #39 point 9), through the real CLI: ``--auto`` cards show no keys to type
(a policy answers); after an answer the call is not shown again as a second card; the interrupt is
announced before it lands; the elapsed time of a turn does not count the time the human took to answer
(in a tmux pane, the human answering after several seconds)."""

from __future__ import annotations

import re
import subprocess
import time

from .conftest import Terminal, cli


def test_auto_cards_show_no_keys_and_no_second_card_and_the_interrupt_is_announced(
    auto_demo: subprocess.CompletedProcess[str],
) -> None:
    run = auto_demo
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert "⏸ permission: run_command" in out and "y allow" not in out and "n: <reason>" not in out
    assert "╭─ ⚙ run_command" not in out and "╭─ ⚙ ask_question" not in out  # the gate's card showed it
    assert out.count("⚙ run_command (as asked above)") == 2
    announced = out.index("the demo interrupts agy while it writes")
    # (at --pace 0 agy may have finished the reply already: the notice says which, issue 47)
    assert announced < max(out.find(STOPPED), out.find(FINISHED))


STOPPED = "ℹ interrupted: agy cancelled the running steps"
FINISHED = "ℹ agy had already finished the reply: nothing was left to interrupt"


def test_the_interrupt_notice_at_pace_0_comes_after_the_reply_and_says_what_agy_did(
    auto_demo: subprocess.CompletedProcess[str],
) -> None:
    """Issue 47: at --pace 0 the notice "cancelled the running steps" came while agy's reply still
    streamed in: the reply's tail followed it (an indented continuation line), and agy had often
    finished the reply. Now the notice comes after the reply's end and says what agy's steps say:
    cancelled (the story cut short) or finished (the story whole). Fails before the fix (the old
    notice, and the tail after it)."""
    run = auto_demo
    assert run.returncode == 0, run.stderr[-2000:]
    story = run.stdout[run.stdout.index("❯ Write a long story") :]
    lines = story.splitlines()
    notices = [line for line in lines if line.startswith("ℹ")]
    assert notices in ([STOPPED], [FINISHED]), story
    after = lines[lines.index(notices[0]) + 1 :]
    assert not any(line.startswith("  ") for line in after), story  # nothing of the reply after it
    shown = " ".join(line.removeprefix("◆ ").strip() for line in lines if line.startswith(("◆", "  ")))
    whole = shown.endswith("how the glass must be cleaned.")
    assert whole == (notices[0] == FINISHED), story  # what it says is what the screen shows


def test_the_elapsed_time_does_not_count_the_humans_thinking(terminal: Terminal) -> None:
    """The second turn's elapsed time is its wall time less the human's thinking (within the screen's
    polling lag), not more: on a loaded machine agy's own work may take longer than the thinking, so the
    bound is what the test saw of the turn, not a fixed number of seconds."""
    pane = terminal.run(cli("demo", "--pace", "0"), width=100, height=30)
    pane.wait(lambda s: s.count("○ idle") >= 1, 60)  # the first turn is over: the second begins
    began = time.monotonic()
    pane.wait("allow? [y/n]", 60)
    thinking, lag = 8.0, 4.0
    time.sleep(thinking)  # the human reads the card
    pane.type("y")
    screen = pane.wait(lambda s: s.count("○ idle") >= 2, 60)
    wall = time.monotonic() - began
    took = [float(x) for x in re.findall(r"○ idle · ([\d.]+)s", screen)]
    # counted with the human's thinking it would be about ``wall``; without, ``wall - thinking``
    assert len(took) >= 2 and took[1] < wall - thinking + lag, (took, wall)
    pane.key("C-c")
