"""The command line as a newcomer meets it: --version, help with examples, validation, exit codes,
one line and no traceback on failure (#16 findings 6 and 11)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from agy_harness.composition.entrypoints.cli import version
from tests.in_process import run_cli


def agy_harness(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


# What a command prints is read here from the command run in this process (tests/in_process.py); the
# real process is run where it is the subject: --version, each command's usage error (exit 2, no
# traceback) and the one line without an agy (exit 1).


def no_traceback(run: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout


def test_version() -> None:
    run = agy_harness("--version")
    assert run.returncode == 0
    assert run.stdout.strip() == f"agy-harness {version()}" and version() != "unknown"


def test_top_level_help_describes_the_tool_with_examples_and_exit_codes() -> None:
    run = run_cli("--help")
    assert run.returncode == 0
    assert "The ``agy-harness`` command" not in run.stdout
    assert "Antigravity" in run.stdout
    for text in (
        "examples:",
        "agy-harness demo --auto",
        "agy-harness attach",
        "agy-harness replay",
        "exit codes:",
        "130",
        "NO_COLOR",
        "stderr",
    ):
        assert text in run.stdout, text


@pytest.mark.parametrize("command", ["demo", "attach", "replay"])
def test_each_command_has_a_description_and_examples(command: str) -> None:
    run = run_cli(command, "--help")
    assert run.returncode == 0
    _usage, _, body = run.stdout.partition("\n\n")
    assert body.strip() and "examples:" in body and f"agy-harness {command}" in body


def test_demo_help_lists_the_profiles_and_the_gate_keys() -> None:
    out = run_cli("demo", "--help").stdout
    assert "{1.0.10,1.0.4}" in out
    for text in ("/cancel", "Ctrl-D", "Ctrl-C", "time a gate out"):
        assert text in out, text
    attach = run_cli("attach", "--help").stdout
    for text in ("/interrupt", "Ctrl-D", "/cancel", "--tmux"):
        assert text in attach, text


@pytest.mark.parametrize(
    ("args", "real"),  # real: a process of its own, one for each command; else in this process
    [
        (["demo", "--pace", "-1"], True),
        (["demo", "--pace", "nan"], False),
        (["demo", "--pace", "fast"], False),
        (["demo", "--profile", "9.9.9"], False),
        (["attach", "--port", "70000"], True),
        (["frobnicate"], True),
        (["doctor", "--port", "99999"], True),
        (["record", "--out", "x", "--port", "0"], True),
        (["acp", "--port", "http"], True),
        (["sim", "--pace", "-1"], True),
    ],
)
def test_usage_errors_exit_2_with_a_usage_line(args: list[str], real: bool) -> None:
    run = agy_harness(*args) if real else run_cli(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    assert "usage: agy-harness" in run.stderr and "error:" in run.stderr
    no_traceback(run)


def test_verbose_before_sim_reaches_the_simulator() -> None:
    run = run_cli("-v", "sim", "--version")  # was: TypeError 'NoneType' object is not callable
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("1.0.10")
    run = run_cli("-vv", "sim", "--profile", "1.0.4", "--version")
    assert run.returncode == 0 and run.stdout.startswith("1.0.4")
    assert run_cli("sim", "--help").stdout.startswith("usage: agy-harness sim")
    assert run_cli("sim", "-v", "--version").returncode == 2  # -v is the tool's, before the command


@pytest.mark.parametrize("command", ["attach", "record --out /dev/null"])  # doctor: test_doctor_environment
def test_without_an_agy_each_command_says_what_to_do_in_one_line_exit_1(command: str) -> None:
    nobody = str(uuid.uuid4())  # no agy (nor simulator) on this machine knows this conversation
    run = agy_harness(*command.split(), "--cascade", nobody)
    assert run.returncode == 1
    no_traceback(run)
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("agy-harness: no agy found") and "agy-harness sim" in line
    assert run.stdout == ""
