"""The rough edges a newcomer met (issue 47), each through the real CLI (a subprocess; the terminal's
own behaviour in a tmux pane): what is said, in one line, and the exit code."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from tests.in_process import run_cli

from .conftest import Pane, Terminal, cli

# The first run of each command in a test is a process of its own (what a shell sees: the exit code,
# one line); the further runs call the same entry in this process (tests/in_process.py: the same argv,
# stdout, stderr and exit code).


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", *args],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, cwd=cwd,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def one_line(done: subprocess.CompletedProcess[str], *said: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for text in said:
        assert text in lines[0], lines[0]
    return lines[0]


def test_record_refuses_to_overwrite_a_recording_unless_forced(tmp_path: Path) -> None:
    """Before, ``record --out`` truncated an existing file without a word (port 1 answers nothing: once
    past the file check the command fails finding agy, exit 1, and says nothing of the file)."""
    kept = tmp_path / "session.jsonl"
    kept.write_text('{"steps": []}\n')
    one_line(run("record", "--port", "1", "--out", str(kept)), f"--out {kept}: the file exists", "--force")
    assert kept.read_text() == '{"steps": []}\n'
    forced = run_cli("record", "--port", "1", "--out", str(kept), "--force")
    assert forced.returncode == 1 and "exists" not in forced.stderr
    assert "--force" in run_cli("record", "--help").stdout


def _sim(terminal: Terminal, *args: str) -> tuple[Pane, str, int]:
    pane = terminal.run(cli("sim", "--pace", "0.05", *args))
    screen = pane.wait(lambda s: re.search(r"^cascade \S+$", s, re.M) is not None)
    cascade = re.search(r"^cascade (\S+)$", screen, re.M)
    port = re.search(r"^port (\d+)$", screen, re.M)
    assert cascade is not None and port is not None
    return pane, cascade.group(1), int(port.group(1))


def test_attach_port_follows_agy_to_its_new_port_after_a_restart(terminal: Terminal) -> None:
    """``attach --port N`` (what attach and sim recommend) follows the conversation to the port agy
    listens on after a restart, as a discovered attach does. Before, it tried port N forever."""
    first, cascade, port = _sim(terminal)
    recording = terminal.tmp_path / "conversation.jsonl"
    rec = terminal.run(cli("record", "--cascade", cascade, "--seconds", "0.5", "--out", str(recording)))
    assert rec.wait_exit() == 0
    pane = terminal.run(cli("attach", "--port", str(port)))
    pane.wait(lambda _s: pane.visible()[-1:] == ["❯"])
    first.key("C-c")
    assert first.wait_exit() == 130
    pane.wait("agy is gone", 60)
    _, served, new_port = _sim(terminal, "--recording", str(recording))  # agy again, on a new port
    assert served == cascade and new_port != port
    pane.wait(lambda _s: f"agy is back on port {new_port}" in " ".join(pane.screen().split()), 60)
    pane.type("Say hello in one short sentence.")
    pane.wait("Hello!", 60)
    pane.key("C-d")
    assert pane.wait_exit(20) == 0


def test_a_bad_answer_at_a_demo_gate_is_one_clear_line(terminal: Terminal) -> None:
    """Before, it was an 8-line wall of the parser's accepted Python values (True / 'allow' / ...)."""
    pane = terminal.run(cli("demo", "--pace", "0"), width=80, height=30)
    pane.wait("allow? [y/n]")
    pane.type("y")
    screen = pane.wait("→ allow")
    pane.wait("allow? [y/n]", after=screen.index("→ allow"))
    pane.type("maybe later")
    pane.wait("not read: 'maybe later'")
    rows = pane.visible()
    at = next(i for i, row in enumerate(rows) if row.startswith("please answer"))
    assert rows[at] == "please answer y (allow), n (deny), 1-3, n: <reason>; not read: 'maybe later'"
    assert rows[at + 1].endswith("allow? [y/n]"), rows[at:]  # one line, then asked again
    assert "True" not in pane.screen() and "'approve'" not in pane.screen()
    pane.type("n")
    pane.wait("→ deny")


GIT_STATUS = """\
[[rule]]
id = "git-status"
decision = "allow"
command = ["git", "status"]
match = ["git status"]
"""
NO_ID = '[[rule]]\ndecision = "allow"\ncommand = ["ls"]\n'


def test_policy_explain_rules_file_then_gate_and_rules_is_documented(tmp_path: Path) -> None:
    """Before, ``--rules`` took every word after it as a file: the gate was eaten (a usage error)."""
    rules = tmp_path / "mine.toml"
    rules.write_text(GIT_STATUS)
    done = run("policy", "explain", "--rules", str(rules), "git status")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("decision: allow (allowed by rule git-status (")
    for help_text in (run_cli("policy", "--help").stdout, run_cli("policy", "explain", "--help").stdout):
        assert "policy explain --rules " in help_text  # an example
    assert "repeat it for several" in run_cli("policy", "explain", "--help").stdout


def test_policy_says_the_same_bad_rules_file_the_same_way(tmp_path: Path) -> None:
    """A rules file that cannot be used is bad input for every action that takes it: exit 2, one line,
    the same words, none of pydantic's ("Field required"). Before, ``trust`` exited 1 and ``explain``
    2, and both said "id: Field required"."""
    project = tmp_path / "proj" / ".agy-harness" / "policy"
    project.mkdir(parents=True)
    bad = project / "rules.toml"
    bad.write_text(NO_ID)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    said = [
        one_line(run("policy", "explain", "--rules", str(bad), "ls", env=env)),
        one_line(run_cli("policy", "trust", str(bad), env=env)),
    ]
    for line in said:
        assert f"{bad}:1: rule 1: `id` is missing" in line, line
        assert "Field required" not in line and "Value error" not in line
    tested = run_cli("policy", "test", str(bad))  # the test's own verdict: a FAIL line, exit 1
    assert (
        tested.returncode == 1
        and tested.stdout == f"FAIL {bad}:1: rule 1: `id` is missing (every rule has it)\n"
    )


def test_policy_trust_refuses_a_file_in_no_rules_directory(tmp_path: Path) -> None:
    """Before, any file was trusted (and recorded), though no session ever reads it."""
    loose = tmp_path / "rules.toml"
    loose.write_text(GIT_STATUS)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    one_line(run("policy", "trust", str(loose), env=env), "not a project rules file", ".agy-harness/policy/")
    assert not (tmp_path / "config").exists()
    project = tmp_path / "proj" / ".agy-harness" / "policy"
    project.mkdir(parents=True)
    (project / "rules.toml").write_text(GIT_STATUS)
    trusted = run_cli("policy", "trust", str(project / "rules.toml"), env=env)
    assert trusted.returncode == 0 and trusted.stdout.startswith(f"trusted {project / 'rules.toml'}")


def test_bare_policy_lists_its_actions() -> None:
    """Before: argparse's "the following arguments are required: ACTION", no action named."""
    done = run("policy")
    assert done.returncode == 2 and done.stdout == ""
    for action, line in (
        ("test", "check rule files' examples"),
        ("explain", "which rules match a command line"),
        ("trust", "trust a project rules file"),
        ("propose", "the narrowest rule allowing exactly"),
    ):
        assert re.search(rf"^    {action} +{re.escape(line)}", done.stderr, re.M), done.stderr
    assert done.stderr.rstrip().endswith(
        "agy-harness policy: name an action: test, explain, trust or propose"
    )
    assert "error: the following arguments are required" not in done.stderr


def test_board_on_a_port_in_use_or_a_bad_host_is_one_line_exit_2() -> None:
    """Before: ``agy-harness: [Errno 98] Address already in use (OSError; ...)``, exit 1."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        one_line(run("board", "--port", str(port)), f"--port {port}: another program listens there")
    for host in ("no.such.host.invalid", "192.0.2.1"):  # (TEST-NET-1: never this machine's)
        line = one_line(
            run_cli("board", "--host", host), f"--host {host}: not an address this machine listens on"
        )
        assert "Errno" not in line and "OSError" not in line and "gaierror" not in line


def test_sim_log_file_into_a_missing_directory_is_refused(tmp_path: Path) -> None:
    """Before, the simulator ran and made the directory (a typo'd path too) without a word; a path it
    could not make was a raw FileNotFoundError, exit 1, after it had started."""
    missing = tmp_path / "no-such-dir" / "agy.log"
    one_line(run("sim", "--log-file", str(missing)), f"--log-file {missing}: there is no directory")
    assert not missing.parent.exists()
    one_line(
        run_cli("sim", "--log-file", "/proc/no-such-dir/agy.log"), "there is no directory /proc/no-such-dir"
    )


def test_a_warning_at_the_default_verbosity_is_one_said_line(tmp_path: Path) -> None:
    """Before: ``2026-12-07 03:31:00,383 WARNING agy_harness.policy: the rules are off: ...``."""
    project = tmp_path / ".agy-harness" / "policy"
    project.mkdir(parents=True)
    (project / "rules.toml").write_text(NO_ID)
    done = run("policy", "explain", "ls", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("decision: ask")
    assert done.stderr.splitlines() == [
        f"agy-harness: warning: the rules are off: {project / 'rules.toml'}:1: rule 1: `id` is missing "
        "(every rule has it)"
    ]
    verbose = run_cli("-v", "policy", "explain", "ls", cwd=tmp_path)  # -v: the log's own lines
    assert re.search(
        r"^\d{4}-\d\d-\d\d [\d:,]+ WARNING agy_harness\.policy: the rules are off", verbose.stderr, re.M
    )


def test_doctor_record_and_audit_fit_an_80_column_terminal(terminal: Terminal, tmp_path: Path) -> None:
    """Each row on screen is at most 80 columns, every word still there (the screen is read with the
    terminal's own wraps joined: a line the terminal wrapped shows as one long row). Before: rows of
    97-314 columns (doctor's checks and gate kinds, record's scopes line, audit's rows)."""
    from agy_harness.adapters.store.ledger_file import FileLedger
    from agy_harness.ports.protocols import LedgerEntry

    _, _, port = _sim(terminal, "--scenario", "gate")
    ledger = tmp_path / "ledger"
    written = FileLedger(ledger)
    shown = "run_command: " + " ".join(f"--flag-{i}=value-{i}" for i in range(12))
    body = {"conversation": "c1", "verdict": "allow", "shown": shown,
            "decided_by": {"kind": "human", "surface": "board", "user": "me"}}  # fmt: skip
    written.record_now(LedgerEntry(type="decision", body=body))
    written.close()
    out = tmp_path / "r.jsonl"
    for command, words in (
        (
            cli("doctor", "--port", str(port)),
            ["this machine:", "gate kinds answered here from the IDE's descriptors"],
        ),
        (cli("record", "--port", str(port), "--seconds", "0.5", "--out", str(out)), ["scopes: RPC"]),
        (cli("audit", "--ledger", str(ledger)), [shown]),
    ):
        pane = terminal.run(command, width=80, height=60)
        assert pane.wait_exit(60) == 0, pane.screen()
        rows = pane.screen().splitlines()
        assert max(len(row) for row in rows) <= 80, [row for row in rows if len(row) > 80]
        said = " ".join(pane.screen().split())
        for text in words:
            assert text in said, (text, said)
