"""Several agy on one machine (issue #39 point 5): ``sim`` prints the exact ``attach --port N`` line (alone
on its line: copied whole, it runs), and with more than one agy answering, ``attach`` (and ``record``)
on a terminal offer the candidates as a numbered list (port, process, directory, conversation title)
and go on with the one picked; elsewhere (stdin or stdout not a terminal) they refuse, listing each
one and the line that picks one. In a terminal of 80x24 and 100x30, with two simulators running."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import Pane, Terminal, cli

SIZES = [(80, 24), (100, 30)]
# (other agy of this user may run on the machine too: each is listed; ours are looked for among them)
QUESTION = re.compile(r"^pick 1-(\d+) and Enter \(Enter alone: none, Ctrl-C quits\):", re.M)


def asked(pane: Pane) -> int:
    """Waits for the question; the number of agy listed."""
    screen = pane.wait(lambda s: QUESTION.search(s) is not None)
    found = QUESTION.search(screen)
    assert found is not None
    return int(found.group(1))


def sim(terminal: Terminal, where: str) -> tuple[Pane, int, str]:
    """A simulator started in directory ``where``: its pane, port and conversation id."""
    pane = terminal.run(f"mkdir -p {where} && cd {where} && {cli('sim', '--pace', '0')}")
    screen = pane.wait(lambda s: re.search(r"^  agy-harness attach --port \d+$", s, re.M) is not None)
    port = re.search(r"^port (\d+)$", screen, re.M)
    cascade = re.search(r"^cascade (\S+)$", screen, re.M)
    assert port is not None and cascade is not None
    rows = screen.splitlines()
    next_line = rows.index("next, in another terminal (Ctrl-C stops the simulator):")
    assert rows[next_line + 1] == f"  agy-harness attach --port {port.group(1)}"  # that line, nothing else
    return pane, int(port.group(1)), cascade.group(1)


def two_sims(terminal: Terminal) -> dict[int, tuple[Pane, str, str]]:
    """Two simulators, in ``one/`` and ``two/``: port -> (pane, directory, conversation)."""
    found = {}
    for where in ("one", "two"):
        pane, port, cascade = sim(terminal, where)
        found[port] = (pane, where, cascade)
    return found


def said(pane: Pane) -> str:
    return " ".join(pane.screen().split())


def listed(pane: Pane, sims: dict[int, tuple[Pane, str, str]]) -> dict[int, int]:
    """The picker's list on screen, checked line by line: port -> its number."""
    rows = pane.screen().splitlines()
    numbers = {}
    for port, (_, where, _) in sims.items():
        row = next((r for r in rows if re.match(rf"^  \d\) port {port} · ", r)), None)
        assert row is not None, rows
        line = re.match(rf"^  (\d)\) port {port} · pid \d+ \(python[\d.]*\) · (\S+)", row)
        assert line is not None, row
        assert line.group(2).endswith(f"/{where}")  # the directory each agy runs in
        numbers[port] = int(line.group(1))
    assert len(set(numbers.values())) == 2
    return numbers


def stop(sims: dict[int, tuple[Pane, str, str]]) -> None:
    for pane, _, _ in sims.values():
        pane.key("C-c")
        assert pane.wait_exit() == 130


@pytest.mark.parametrize(("width", "height", "redirect"), [(80, 24, "</dev/null"), (100, 30, "| cat")])
def test_attach_without_a_terminal_refuses_two_agy_saying_which_is_which(
    terminal: Terminal, width: int, height: int, redirect: str
) -> None:
    """stdin (or stdout) not a terminal: nobody to ask, the refusal lists each agy; exit 1."""
    sims = two_sims(terminal)
    pane = terminal.run(f"set -o pipefail; {cli('attach')} {redirect}", width=width, height=height)
    assert pane.wait_exit() == 1
    text = said(pane)
    assert re.search(
        r"more than one agy answers \(\d+\); pick one with --port, e.g. agy-harness attach --port", text
    )
    for port, (_, where, _) in sims.items():
        line = re.search(rf"port {port} · pid \d+ \(python[\d.]*\) · (\S+)", text)
        assert line is not None, text
        assert line.group(1).endswith(f"/{where}")
    assert "and Enter (Enter alone" not in text and "Traceback" not in text
    stop(sims)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_attach_on_a_terminal_asks_which_agy_and_binds_the_one_picked(
    terminal: Terminal, width: int, height: int, tmp_path: Path
) -> None:
    sims = two_sims(terminal)
    pane = terminal.run(cli("attach"), width=width, height=height)
    count = asked(pane)
    assert "more than one agy answers; which one should attach use?" in pane.screen()
    numbers = listed(pane, sims)
    assert QUESTION.match(pane.visible()[-1])  # the question waits on the bottom line
    pane.type("0")  # not listed: said in one line, asked again
    screen = pane.wait(f"'0' is not one of 1-{count}")
    assert len(QUESTION.findall(screen)) == 2

    picked = max(sims)  # pick the second-started one by its number on screen
    pane.type(str(numbers[picked]))
    pane.wait(f"attach: port {picked} (next time: agy-harness attach --port {picked})")
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    assert "attached ·" in pane.screen()
    pane.type("the turn for the agy picked")
    pane.wait(lambda _s: "the turn for the agy picked" in said(pane) and pane.visible()[-1:] == ["❯"])
    pane.key("C-d")
    assert pane.wait_exit() == 0
    assert "Traceback" not in pane.screen()

    for port, (_, _, cascade) in sims.items():  # what each agy received: the turn reached the one picked
        out = tmp_path / f"{port}.jsonl"
        rec = terminal.run(cli("record", "--port", str(port), "--seconds", "0.5", "--out", str(out)))
        assert rec.wait_exit() == 0
        recorded = out.read_text()
        assert cascade in recorded
        assert ("the turn for the agy picked" in recorded) == (port == picked), port
    stop(sims)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_picking_none_exits_in_one_line_and_ctrl_c_exits_130(
    terminal: Terminal, width: int, height: int
) -> None:
    sims = two_sims(terminal)
    for key, code in (("Enter", 1), ("C-d", 1), ("C-c", 130)):
        pane = terminal.run(cli("attach"), width=width, height=height)
        asked(pane)
        pane.key(key)
        assert pane.wait_exit() == code, key
        text = said(pane)
        if code == 1:  # one line naming the line that picks one
            shown = re.search(
                r"agy-harness: no agy picked; name one with --port, e.g. agy-harness attach --port (\d+)",
                text,
            )
            assert shown is not None and shown.group(1) in re.findall(r"\d\) port (\d+) · ", text), text
        else:
            assert "agy-harness: interrupted" in text
        assert "attached" not in text and "Traceback" not in text
    stop(sims)


def test_record_on_a_terminal_asks_which_agy_too(terminal: Terminal, tmp_path: Path) -> None:
    sims = two_sims(terminal)
    out = tmp_path / "picked.jsonl"
    pane = terminal.run(cli("record", "--seconds", "0.5", "--out", str(out)), width=80, height=24)
    asked(pane)
    assert "more than one agy answers; which one should record use?" in pane.screen()
    numbers = listed(pane, sims)
    picked = min(sims)
    pane.type(str(picked))  # a listed port is a choice too
    pane.wait(f"record: port {picked} (next time: agy-harness record --port {picked})")
    assert pane.wait_exit() == 0, numbers
    recorded = out.read_text()
    for port, (_, _, cascade) in sims.items():
        assert (cascade in recorded) == (port == picked)
    stop(sims)


def test_a_directory_s_control_characters_show_as_text_in_the_refusal_and_the_picker(terminal: Terminal) -> None:
    """A directory agy runs in is named by whoever made it (a cloned repository): its control
    characters reach the screen as visible escapes (the display rule), never as a terminal command
    (here: an escape that would paint the rest of the line red and one that sets the window title)."""
    hostile = "two\x1b[31mRED\x1b]2;pwned\x07"
    shown = "two\\x1b[31mRED\\x1b]2;pwned\\x07"
    one, _first, _ = sim(terminal, "one")
    two = terminal.run(f"mkdir -p $'two\\e[31mRED\\e]2;pwned\\a' && cd $'two\\e[31mRED\\e]2;pwned\\a' && "
                       f"{cli('sim', '--pace', '0')}")  # fmt: skip
    two.wait("Ctrl-C stops the simulator")
    refusal = terminal.run(cli("attach") + " </dev/null")
    assert refusal.wait_exit() == 1
    assert "more than one agy answers" in said(refusal) and shown in said(refusal), said(refusal)
    assert hostile not in said(refusal)
    picker = terminal.run(cli("attach"))
    asked(picker)
    assert shown in said(picker) and hostile not in said(picker)
    picker.key("C-c")
    assert picker.wait_exit() == 130
    for p in (one, two):
        p.key("C-c")
        assert p.wait_exit() == 130
