"""Bad input to any command is exit 2 with one line that names the file or value and what to do (no
traceback, no exception name); ``acp`` exits 130 on Ctrl-C after serving messages too; ``sim --tui``
plays ``--scenario``. Through the real CLI (a subprocess, or the same entry in this process for the
further cases of a command; the TUI in a tmux pane)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.in_process import run_cli

from .conftest import Terminal, cli

# The first case of each test runs the command as a process of its own (exit 2, one line, no
# traceback, as a shell sees them); the further cases of the same command run it in this process
# (tests/in_process.py: the same argv, the same stdout, stderr and exit code).


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def one_line(done: subprocess.CompletedProcess[str], *said: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and "Error;" not in done.stderr and "Error)" not in done.stderr
    for text in said:
        assert text in lines[0], lines[0]
    return lines[0]


def test_a_missing_recording(tmp_path: Path) -> None:
    one_line(
        run("sim", "--recording", str(tmp_path / "nope.jsonl")), "nope.jsonl: no such file", "record --out"
    )


def test_a_bad_recording_names_the_file_and_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"steps": []}) + "\n\n{not json\n")
    one_line(run("sim", "--recording", str(bad)), f"--recording {bad}, line 3: not JSON")
    one_line(run_cli("sim", "--recording", str(tmp_path)), "a directory")


def test_record_out_where_nothing_can_be_written(tmp_path: Path) -> None:
    """Refused before agy is looked for (port 1 answers nothing: that would be exit 1)."""
    missing = tmp_path / "nonexistent" / "x.jsonl"
    one_line(run("record", "--port", "1", "--out", str(missing)), f"--out {missing}", "no directory")
    one_line(run_cli("record", "--port", "1", "--out", str(tmp_path)), "a directory", "session.jsonl")


def test_attach_tmux_without_tmux(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    one_line(run("attach", "--tmux", "%1", env=env), "--tmux %1: tmux is not installed", "leave out --tmux")


def test_attach_tmux_without_that_pane(tmp_path: Path) -> None:
    env = {**os.environ, "TMUX_TMPDIR": str(tmp_path)}  # no tmux server there
    one_line(run("attach", "--tmux", "%1", env=env), "--tmux %1: no such tmux pane", "#{pane_id}")


def test_board_notify_is_checked_and_needs_somewhere_to_go() -> None:
    done = run("board", "--notify", "bogus")
    assert done.returncode == 2 and "unknown kind(s) bogus; choose from gate, turn, failed" in done.stderr
    one_line(run_cli("board", "--notify", "gate"), "nowhere to send", "--notify-urls-file PATH")
    one_line(run_cli("board", "--notify-content"), "nowhere to send", "--notify-urls-file PATH")
    one_line(
        run_cli("board", "--webhook", "https://example.invalid/t"), "--webhook is gone", "--notify-urls-file"
    )


def test_acp_ctrl_c_is_130_after_serving_a_message() -> None:
    """(It exited 0 once a message was served: the SDK's loop ended quietly on asyncio's cancel.)"""
    acp = subprocess.Popen(
        [sys.executable, "-m", "agy_harness.composition.cli", "acp", "--sim"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert acp.stdin is not None and acp.stdout is not None
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    acp.stdin.write(json.dumps(message).encode() + b"\n")
    acp.stdin.flush()
    assert json.loads(acp.stdout.readline())["id"] == 1
    acp.send_signal(signal.SIGINT)
    _, err = acp.communicate(timeout=60)
    assert acp.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "agy-harness: interrupted"


def test_sim_tui_plays_its_scenario(terminal: Terminal) -> None:
    tui = terminal.run(cli("sim", "--tui", "--scenario", "gate", "--pace", "0"), width=100, height=30)
    tui.wait("? Allow this command?")  # the gate scenario's `pwd`, waiting at the TUI
    assert "pwd" in tui.screen()
    tui.key("C-c")  # the line is empty: Ctrl-C quits
    tui.wait("EXIT=130")


def test_audit_with_a_ledger_or_an_out_that_cannot_be_used(tmp_path: Path) -> None:
    """``audit --ledger FILE`` and an ``--out`` in no directory: exit 2, one line naming the option and
    what is wrong (it was exit 1 with "NotADirectoryError" / "FileNotFoundError")."""
    plain = tmp_path / "plain.txt"
    plain.write_text("not a ledger\n")
    for action, runs in (("list", run), ("verify", run_cli)):
        one_line(runs("audit", action, "--ledger", str(plain)), f"--ledger {plain}", "not a directory")
    ledger = tmp_path / "ledger"
    ledger.mkdir(mode=0o700)
    nowhere = tmp_path / "nonexistent" / "x.jsonl"
    one_line(
        run_cli("audit", "export", "--ledger", str(ledger), "--format", "jsonl", "--out", str(nowhere)),
        f"--out {nowhere}",
        "no such file or directory",
    )
    one_line(
        run_cli("audit", "export", "--ledger", str(ledger), "--format", "aat", "--out", str(plain / "sub")),
        f"--out {plain / 'sub'}",
    )


def test_audit_lists_a_ledger_s_text_by_the_display_rule(tmp_path: Path) -> None:
    """A record's text reaches the terminal by the display rule: its control characters as text."""
    from agy_harness.adapters.store.ledger_file import FileLedger
    from agy_harness.ports.protocols import LedgerEntry

    ledger = tmp_path / "ledger"
    written = FileLedger(ledger)
    body = {"conversation": "c1", "verdict": "allow", "shown": "ls \x1b[2J\x1b]2;x\x07",
            "decided_by": {"kind": "human", "surface": "board\x1b[31m", "user": "me"}}  # fmt: skip
    written.record_now(LedgerEntry(type="decision", body=body))
    written.close()
    done = run_cli("audit", "--ledger", str(ledger))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "ls \\x1b[2J\\x1b]2;x\\x07" in done.stdout and "board\\x1b[31m" in done.stdout


def test_policy_refuses_what_it_cannot_honour(tmp_path: Path) -> None:
    """``policy``'s files and directories that cannot be read: exit 2, one line, never a decision made
    without them (``explain --rules MISSING`` said "decision: ask", exit 0; ``--workspace MISSING``
    read no project rules, silently; ``test --recorded MISSING`` was exit 1 naming UnreadableInput)."""
    missing = tmp_path / "nope.toml"
    one_line(
        run("policy", "explain", "ls", "--rules", str(missing)), "--rules", "nope.toml", "cannot be read"
    )
    for action in (["explain", "ls"], ["test"]):
        one_line(
            run_cli("policy", *action, "--workspace", str(tmp_path / "nodir")),
            "--workspace",
            "no such directory",
        )
    done = run_cli("policy", "test", "--recorded", str(tmp_path / "nope.json"))
    one_line(done, "--recorded", "nope.json")
    assert done.stdout == ""  # refused before anything is said to be ok


def test_policy_trust_of_no_file_and_propose_of_no_command(tmp_path: Path) -> None:
    """``policy trust MISSING`` and ``policy propose ''`` are bad input: exit 2, one line naming the
    value and what to do (both were exit 1); nothing is trusted."""
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    missing = tmp_path / "nope.toml"
    one_line(
        run("policy", "trust", str(missing), env=env), f"policy trust {missing}: no such file", "rules file"
    )
    one_line(run_cli("policy", "trust", str(tmp_path), env=env), f"policy trust {tmp_path}: a directory")
    assert not (tmp_path / "config").exists() and not (tmp_path / "state").exists()
    for empty in ("", "   "):
        one_line(
            run("policy", "propose", empty), f"policy propose {empty!r}: an empty command", "policy propose"
        )
