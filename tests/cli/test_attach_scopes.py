"""``agy-harness attach`` in a terminal (issue 34): a permission's allows shown as labelled, numbered
choices, the text forms and numbers accepted, an edit shown and confirmed before it runs, and a kind
nothing here answers shown by name. The simulator runs in a pane of its own; the test types and reads
the screen."""

from __future__ import annotations

from .conftest import Terminal
from .test_attach_terminal import attach, start_sim


def test_scopes_are_labelled_choices_and_a_conversation_grant_is_kept(terminal: Terminal) -> None:
    pane = attach(terminal, start_sim(terminal))
    pane.type("run: ls -la")
    screen = pane.wait("allow? [y/n]")
    for line in (
        "1) Allow once",
        "2) Allow for this conversation: commands that start with 'ls'",
        "3) Always allow: commands that start with 'ls'",
        "type a number, or 'allow conversation' · 'allow always'",
    ):
        assert line in screen, line
    assert "Allow in this" not in screen  # never a choice it does not offer (workspace, project)
    pane.type("allow conversation")
    screen = pane.wait("○ idle")
    assert "→ allow for this conversation: commands that start with 'ls'" in screen
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    pane.type("run: ls src")  # covered by the grant: agy runs it without asking
    pane.wait(lambda s: s.count("○ idle") >= 2)
    assert pane.screen().count("allow? [y/n]") == 1
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_a_number_picks_a_scope_and_an_edit_is_confirmed_before_it_runs(terminal: Terminal) -> None:
    pane = attach(terminal, start_sim(terminal))
    pane.type("kind: runCommand rm -rf build")
    screen = pane.wait("allow? [y/n]")
    assert "⏸ agy asks to run a command" in screen  # the card names the kind, in words (issue 45)
    assert "edit: <command> run your edit instead" in screen and "n: <reason>" not in screen
    pane.type("2")  # runCommand offers only once: 2 is no choice, asked again
    pane.wait("please answer y (allow), n (deny)")
    pane.type("edit: rm -rf build/tmp")
    pane.wait("run the edited command? [y/n]")
    assert "  $ rm -rf build/tmp" in pane.screen()
    pane.type("y")
    screen = pane.wait("○ idle")
    assert "→ allow the edited command: rm -rf build/tmp" in screen
    assert "(simulated) rm -rf build/tmp: ok" in screen  # what ran is the edit
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_a_kind_nothing_here_answers_is_named(terminal: Terminal) -> None:
    pane = attach(terminal, start_sim(terminal))
    pane.type("kind: artifactReviewPolicy file:///brain/plan.md")
    screen = pane.wait("answer in agy's")  # (the line wraps at the pane's width)
    assert "agy asks to review an artifact" in screen and "file:///brain/plan.md" in screen
    assert "artifactReviewPolicy" not in screen.split("❯", 1)[-1].split("\n", 1)[-1]  # in words
    assert "allow? [y/n]" not in screen  # nothing to answer here
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_a_browser_kind_is_answered_at_the_attach_prompt(terminal: Terminal) -> None:
    """Issue 45: agy's descriptors give openBrowserUrl's answer ({confirm}): attach asks it, y allows."""
    pane = attach(terminal, start_sim(terminal))
    pane.type("kind: openBrowserUrl https://example.com/")
    screen = pane.wait("allow? [y/n]")
    assert "agy asks to open https://example.com/ in a browser" in screen
    assert "(openBrowserUrl)" not in screen and "answer in agy's terminal" not in screen
    pane.type("y")
    pane.wait("The open browser url request was allowed.")
    pane.key("C-d")
    assert pane.wait_exit(20) == 0
