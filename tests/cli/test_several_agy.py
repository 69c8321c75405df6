"""Several agy on one machine (issue #39 point 5): ``sim`` prints the exact ``attach --port N`` line, and
``attach`` with more than one agy answering refuses, listing each one (port, process, directory,
conversation title where agy has one) and the line that picks one. In a terminal of 80x24 and 100x30."""

from __future__ import annotations

import re

import pytest

from .conftest import Pane, Terminal, cli


def sim(terminal: Terminal, where: str) -> tuple[Pane, int]:
    pane = terminal.run(f"mkdir -p {where} && cd {where} && {cli('sim', '--pace', '0')}")
    screen = pane.wait("Ctrl-C stops the simulator")
    port = re.search(r"^port (\d+)$", screen, re.M)
    assert port is not None
    assert f"next, in another terminal: agy-harness attach --port {port.group(1)}" in screen
    return pane, int(port.group(1))


@pytest.mark.parametrize(("width", "height"), [(80, 24), (100, 30)])
def test_attach_refuses_two_agy_saying_which_is_which(terminal: Terminal, width: int, height: int) -> None:
    one, first = sim(terminal, "one")
    two, second = sim(terminal, "two")
    pane = terminal.run(cli("attach"), width=width, height=height)
    assert pane.wait_exit() == 1
    said = " ".join(pane.screen().split())
    assert (
        "more than one agy answers" in said and "pick one with --port, e.g. agy-harness attach --port" in said
    )
    for port, where in ((first, "one"), (second, "two")):
        line = re.search(rf"port {port} · pid \d+ \(python[\d.]*\) · (\S+)", said)
        assert line is not None, said
        assert line.group(1).endswith(f"/{where}")  # the directory each agy runs in
    assert "Traceback" not in said
    for pane_of_sim in (one, two):
        pane_of_sim.key("C-c")


def test_the_refusal_shows_a_directory_s_control_characters_as_text(terminal: Terminal) -> None:
    """A directory agy runs in is named by whoever made it (a cloned repository): its control
    characters reach the screen as visible escapes (the display rule), never as a terminal command
    (here: an escape that would paint the rest of the line red and one that sets the window title)."""
    hostile = "two\x1b[31mRED\x1b]2;pwned\x07"
    one, _first = sim(terminal, "one")
    pane = terminal.run(f"mkdir -p $'two\\e[31mRED\\e]2;pwned\\a' && cd $'two\\e[31mRED\\e]2;pwned\\a' && "
                        f"{cli('sim', '--pace', '0')}")  # fmt: skip
    pane.wait("Ctrl-C stops the simulator")
    refusal = terminal.run(cli("attach"))
    assert refusal.wait_exit() == 1
    said = " ".join(refusal.screen().split())
    assert "more than one agy answers" in said
    assert "two\\x1b[31mRED\\x1b]2;pwned\\x07" in said, said  # the escapes shown as text
    assert hostile not in said
    for p in (one, pane):
        p.key("C-c")
