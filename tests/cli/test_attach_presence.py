"""``attach`` while agy goes away and comes back (issue #39 point 2), in a terminal of 80x24 and 100x30.

Without ``-v`` no log line reaches the screen: agy's absence is one status line ("agy is gone —
waiting; Ctrl-D detaches"), an agy that answers again without this conversation is said once with what
to do (never re-bound: no "trajectory not found" every 10 s), and the agy that comes back with it is
"agy is back on port N"; the conversation then goes on. (It used to print timestamped ERROR and
WARNING lines twice a second, and re-bind the new agy.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .conftest import Pane, Terminal, cli

GONE = "agy is gone — waiting; Ctrl-D detaches"
PROBE = "served Heartbeat"  # what the simulator logs (-vv) for each probe attach sends it


def sim(terminal: Terminal, *args: str, log: Path | None = None) -> tuple[Pane, str, int]:
    """A simulator in a pane; with ``log``, its -vv lines (each request it served) go to that file."""
    # (Ctrl-C's ^C stays on its line when stderr goes to the file: a newline, then the same status)
    logged = f" 2>{shlex.quote(str(log))} || {{ s=$?; echo; (exit $s); }}"
    command = cli("-vv", "sim", "--pace", "0.05", *args) + logged if log else None
    pane = terminal.run(command or cli("sim", "--pace", "0.05", *args))
    screen = pane.wait(lambda s: re.search(r"^cascade \S+$", s, re.M) is not None)
    cascade = re.search(r"^cascade (\S+)$", screen, re.M)
    port = re.search(r"^port (\d+)$", screen, re.M)
    assert cascade is not None and port is not None
    return pane, cascade.group(1), int(port.group(1))


def stop(pane: Pane) -> None:
    pane.key("C-c")
    assert pane.wait_exit() == 130


def said(pane: Pane) -> str:
    """The screen's text with the sink's own line breaks undone (it wraps to the terminal's width)."""
    return " ".join(pane.screen().split())


def calm(screen: str) -> None:
    for noise in ("ERROR", "WARNING", "rpc.client", "not connecting", "trajectory not found", "HTTP 500"):
        assert noise not in screen, noise


@pytest.mark.parametrize(("width", "height"), [(80, 24), (100, 30)])
def test_agy_gone_elsewhere_and_back_is_said_once_each(terminal: Terminal, width: int, height: int) -> None:
    first, cascade, _ = sim(terminal)
    recording = terminal.tmp_path / "conversation.jsonl"
    rec = terminal.run(cli("record", "--cascade", cascade, "--seconds", "0.5", "--out", str(recording)))
    assert rec.wait_exit() == 0  # the conversation, to serve it again later

    pane = terminal.run(cli("attach", "--cascade", cascade), width=width, height=height)
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    stop(first)
    pane.wait(GONE, 60)

    served = terminal.tmp_path / "other.log"
    other, _, _ = sim(terminal, log=served)  # a new agy, without the conversation
    # (its port is named, with any other agy of this user that answers on this machine)
    elsewhere = f"but without conversation {cascade}: not followed"
    pane.wait(lambda _s: elsewhere in said(pane), 60)
    # attach goes on asking the new agy for the conversation (each 0.5 s): a flood, as there was one
    # twice a second, would have shown by the time the new agy served six more of those probes
    probes = lambda: served.read_text().count(PROBE)  # noqa: E731

    def six_more_probes() -> None:
        seen = probes()
        pane.wait(lambda _s: probes() >= seen + 6, 60)

    six_more_probes()
    third, _, _ = sim(terminal)  # another agy without it comes, then goes: no news (it was said again)
    six_more_probes()
    stop(third)
    six_more_probes()
    screen = said(pane)
    assert screen.count(GONE) == 1 and screen.count("without conversation") == 1, screen
    calm(screen)
    stop(other)

    _, served, port = sim(terminal, "--recording", str(recording))  # agy with the conversation again
    assert served == cascade
    pane.wait(lambda _s: f"agy is back on port {port}" in said(pane), 60)
    pane.type("Say hello in one short sentence.")
    pane.wait("Hello!", 60)
    screen = said(pane)
    assert screen.count(GONE) == 1 and screen.count("agy is back on port") == 1, screen
    calm(screen)
    assert max(len(row) for row in pane.visible()) <= width
    pane.key("C-d")
    assert pane.wait_exit(20) == 0
