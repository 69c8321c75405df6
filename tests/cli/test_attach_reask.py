"""attach repeated the question card (issue 47): agy re-asks a question whose wait timed out (the same
question, a higher stepIndex; ``sim --gate-timeout``). Live, each card closed by the timeout was said
closed twice ("the gate closed: timed out", "· timed out, 04:18", "(agy no longer waits...)") and its
call printed as a second card of the whole question before the re-ask's own card; read back from the
history by a later attach, every re-ask was the whole question card again. Now: one card per question
the human must answer, the re-ask says once that it replaces the card above, the call of a card shown
is one line, and a retried call in the history is one line."""

from __future__ import annotations

import re

from .conftest import Terminal, cli

REASK = "↻ agy asks again (the card above timed out):"
QUESTION_CARD = "╭─ ? question"
CALL_CARD = "╭─ ⚙ ask_question"


def test_a_reasked_question_is_one_card_each_time_and_its_call_is_never_a_second_card(
    terminal: Terminal,
) -> None:
    """Fails before the fix: no ↻ line, and the call's card repeated the whole question."""
    sim = terminal.run(cli("sim", "--pace", "0.05", "--gate-timeout", "2"))
    screen = sim.wait(lambda s: re.search(r"^cascade \S+$", s, re.M) is not None)
    match = re.search(r"^cascade (\S+)$", screen, re.M)
    assert match is not None
    pane = terminal.run(cli("attach", "--cascade", match.group(1)))
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    pane.type("ask: which part should we work on first?")
    pane.wait(lambda s: s.count(REASK) >= 2, 60)  # agy asked it three times at least
    pane.wait("○ idle", 60)  # agy gave up asking: "Nobody answered the question in time."
    live = pane.screen()
    cards, reasks = live.count(QUESTION_CARD), live.count(REASK)
    assert cards == reasks + 1, live  # one card per question asked, each re-ask said once
    assert live.count("the gate closed: timed out, ") == cards, live  # each closing said once, on one line
    assert "· timed out" not in live and "agy no longer waits for this answer" not in live, live
    assert CALL_CARD not in live and live.count("⚙ ask_question (as asked above)") == cards, live
    pane.key("C-d")
    assert pane.wait_exit(20) == 0
    # read back from agy's history: the call's card once, each retry one line
    again = terminal.run(cli("attach", "--cascade", match.group(1)))
    again.wait(lambda _s: again.visible()[-1:] == ["❯"])
    # the history is drawn above the prompt as it is read (the prompt can come first): wait for its end,
    # agy's closing reply to the unanswered question
    history = again.wait("Nobody answered the question in time.")
    assert history.count(CALL_CARD) == 1, history
    assert history.count("⚙ ask_question again (the same call as above)") == cards - 1, history
    again.key("C-d")
    assert again.wait_exit(20) == 0
