"""``agy-harness attach`` binds each answer to the request the human saw (issue #26, cases 1 and 6).

* ``--tmux PANE``: answering ``y`` to ``echo a`` never approves ``rm -rf ~/work``, which agy (the
  simulated TUI, paced fast) asks next within milliseconds: the human is asked about it, and it waits;
* at 80×24, ``rm -rf ~/work #`` + 40 empty lines + ``ls -la`` still shows the dangerous line when
  ``allow?`` is asked (blank-line runs collapsed with a count, the first line beside the prompt).
"""

from __future__ import annotations

import json
import shlex
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from .conftest import Pane, Terminal, cli

SERVICE = "/exa.language_server_pb.LanguageServerService/"
RM = "rm -rf ~/work"


def rpc(port: int, method: str, body: dict[str, Any]) -> dict[str, Any]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}{SERVICE}{method}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"},
    )
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        data = json.loads(response.read() or b"{}")
    assert isinstance(data, dict)
    return data


def steps(port: int, cascade: str) -> list[dict[str, Any]]:
    return list(rpc(port, "GetCascadeTrajectorySteps", {"cascadeId": cascade}).get("steps", []))


def start_tui(terminal: Terminal, tmp_path: Path) -> tuple[Pane, int, str]:
    port_file = tmp_path / "agy-port"
    argv = [sys.executable, "-m", "agy_harness.adapters.simulator.tui", "--pace", "0.01"]
    pane = terminal.run(shlex.join([*argv, "--port-file", str(port_file)]))
    deadline = time.monotonic() + 30
    while not (port_file.exists() and len(port_file.read_text().split()) == 2):
        assert time.monotonic() < deadline, pane.screen()
        time.sleep(0.05)
    port, cascade = port_file.read_text().split()
    return pane, int(port), cascade


def attach(terminal: Terminal, *args: str, width: int = 120, height: int = 50) -> Pane:
    pane = terminal.run(cli("attach", *args), width=width, height=height)
    pane.wait("Ctrl-D detaches")
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    return pane


def test_allowing_echo_a_never_approves_the_rm_agy_asks_next(terminal: Terminal, tmp_path: Path) -> None:
    agy, port, cascade = start_tui(terminal, tmp_path)
    pane = attach(terminal, "--port", str(port), "--cascade", cascade, "--tmux", agy.pane_id)
    pane.type(f"run: echo a && {RM}")
    pane.wait("allow? [y/n]")
    pane.type("y")
    pane.wait(lambda s: s.count("allow") >= 2 and f"$ {RM}" in s, 30)  # the human is asked about it
    time.sleep(1.0)  # time for stray keys to land
    [rm] = [s for s in steps(port, cascade) if s.get("runCommand", {}).get("commandLine") == RM]
    assert rm["status"] == "CORTEX_STEP_STATUS_WAITING" and "completedInteractions" not in rm
    pane.type("n")
    pane.wait("○ idle", 30)
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_the_dangerous_line_is_on_screen_when_allow_is_asked(terminal: Terminal) -> None:
    sim = terminal.run(cli("sim", "--pace", "0.05"))
    screen = sim.wait(lambda s: "cascade " in s and "port " in s)
    port = int(screen.split("port ")[1].split()[0])
    cascade = screen.split("cascade ")[1].split()[0]
    pane = attach(terminal, "--port", str(port), "--cascade", cascade, width=80, height=24)
    command = "rm -rf ~/work #" + "\n" * 40 + "ls -la"
    rpc(port, "SendUserCascadeMessage", {"cascadeId": cascade, "items": [{"text": f"run `{command}`"}]})
    pane.wait("allow", 30)
    time.sleep(0.5)
    shown = "\n".join(pane.visible())
    assert RM in shown, shown  # on screen, at the moment of asking
    assert "39 blank lines" in shown and "ls -la" in shown, shown  # 40 line breaks: 39 empty lines
    prompt = pane.visible()[-1]
    assert RM in prompt and "[y/n]" in prompt, prompt  # its first line beside the prompt
    pane.type("n")
    pane.wait("○ idle", 30)
    pane.key("C-d")
    assert pane.wait_exit(20) == 0
