"""Every command at the polish of uv or gh (#23 items 5, 6, 10, 11): one help style, the README's
command table true for each option, usage errors shown as the failing command's own, fast --help
and --version, and `replay` that says what is wrong with its input (or that it holds no step)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agy_harness.composition.entrypoints.cli import build_parser
from tests.in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["demo", "attach", "replay", "sim", "acp", "doctor", "record", "board", "audit", "policy"]


# ``agy_harness``: the command as a process of its own, where the process is the subject (its imports,
# exit codes, one line and no traceback); ``run_cli`` (tests/in_process.py): the same command in this
# process, where what it prints is.


def agy_harness(*args: str, stdin: str = "", extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, *extra, "-m", "agy_harness.composition.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def shown_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS and a.dest != "help"
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_one_help_style(command: str) -> None:
    run = run_cli(command, "--help")
    assert run.returncode == 0 and run.stderr == ""
    usage, _, rest = run.stdout.partition("\n\n")
    description, _, rest = rest.partition("\n\n")
    assert usage.startswith(f"usage: agy-harness {command}")
    assert len(description.split()) >= 12, description  # a description, not a one-liner
    assert "``" not in run.stdout and ":class:" not in run.stdout  # no docstring markup
    examples = run.stdout.split("examples:\n", 1)[1].splitlines()
    lines = [line for line in examples if line.startswith(f"  agy-harness {command}")]
    assert 2 <= len(lines) <= 4, examples


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_says_its_default_and_placeholders_are_the_same_everywhere(command: str) -> None:
    parser = subparsers()[command]
    for action in shown_options(parser):
        takes_value = action.nargs != 0
        if takes_value and not action.required:
            assert "default" in (action.help or ""), (command, action.option_strings, action.help)
        if "--port" in action.option_strings:
            assert action.metavar == "N"
        if "--cascade" in action.option_strings:
            assert action.metavar == "ID"
        if "--tmux" in action.option_strings:
            assert action.metavar == "PANE"
        if {"--pace", "--sim-pace"} & set(action.option_strings):
            assert action.metavar == "SCALE"


def test_the_readme_command_table_names_every_option() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Commands") : readme.index("Every command has `--help`")]
    rows = {}
    for line in table.splitlines():
        match = re.match(r"\| `agy-harness (\w+)", line)
        if match:
            rows[match.group(1)] = line
    assert sorted(rows) == sorted(COMMANDS)
    for command, parser in subparsers().items():
        for action in shown_options(parser):
            assert action.option_strings[-1] in rows[command], (command, action.option_strings)


def test_no_command_shows_the_help_and_exits_2() -> None:
    run = run_cli()
    assert run.returncode == 2 and run.stdout == ""
    assert (
        run.stderr.startswith("usage: agy-harness") and "examples:" in run.stderr and "COMMAND" in run.stderr
    )


def test_a_bad_option_is_reported_by_its_own_command() -> None:
    run = agy_harness("replay", "--bogus", "x.json")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("usage: agy-harness replay")
    assert "agy-harness replay: error: unrecognized arguments: --bogus" in run.stderr


def test_a_port_out_of_range_is_bad_input_for_every_command() -> None:
    for command in ("doctor", "attach", "acp", "board"):
        run = run_cli(command, "--port", "99999")
        assert run.returncode == 2, command
        assert f"usage: agy-harness {command}" in run.stderr and "a port is 1-65535, not 99999" in run.stderr
        assert "NonLoopbackError" not in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["demo", "--help"], ["sim", "--help"]])
def test_help_and_version_import_nothing_heavy(args: list[str]) -> None:
    """--version took 0.6 s: it imported the whole harness (aiohttp, pydantic, the simulator's server)."""
    run = agy_harness(*args, extra=("-X", "importtime"))
    assert run.returncode == 0
    imported = {
        line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")
    }
    heavy = {"aiohttp", "pydantic", "hypercorn", "dependency_injector", "rich", "psutil", "libtmux"}
    if "--help" in args:  # the help is laid out by rich-argparse (to the terminal's width): rich only
        heavy.discard("rich")
    assert not heavy & imported, heavy & imported


#: what no command here uses: the board's web stack, the ACP SDK, the browser driver, and the optional
#: integrations dependency-injector imports when they are installed (composition/root/dependency_injection.py)
NEVER = {"starlette", "acp", "playwright", "pydantic_settings", "yaml", "werkzeug", "fastapi", "fast_depends"}
#: what reaches agy (its transport, the simulator's server, tmux) and what runs a session
AGY = {"aiohttp", "hypercorn", "libtmux", "agy_harness.composition.service.harness"}
SHAPE = str(ROOT / "adapters/simulator/shapes/user_input.json")
#: ``python -c LOADED FILE ARGS...``: the command with ARGS, writing the modules it loaded to FILE at exit
LOADED = (
    "import atexit, runpy, sys; out = sys.argv.pop(1); "
    "atexit.register(lambda: open(out, 'w').write(' '.join(sys.modules))); "
    "runpy.run_module('agy_harness.composition.cli', run_name='__main__')"
)


@pytest.mark.parametrize(
    ("args", "code", "unused"),
    [
        (["replay", SHAPE], 0, NEVER | AGY),  # the reconciler alone, from the container
        (["policy", "test"], 0, NEVER | AGY),  # the rules over the recorded gates (replay's)
        (["audit", "--ledger", "{tmp}/ledger"], 0, NEVER | AGY),
        (["audit", "verify", "--ledger", "{tmp}/ledger"], 0, NEVER | AGY | {"pydantic"}),  # no event read
        (["doctor", "--port", "1"], 1, NEVER | {"hypercorn", "agy_harness.composition.service.harness"}),
        (["record", "--port", "1", "--out", "{tmp}/r.jsonl"], 1, NEVER | {"hypercorn", "libtmux"}),
        (["attach", "--port", "1"], 1, NEVER | {"hypercorn"}),
    ],
)
def test_each_command_imports_only_what_it_uses(
    tmp_path: Path, args: list[str], code: int, unused: set[str]
) -> None:
    """Every start of a command paid for the whole harness: ``replay`` and ``policy test`` imported
    aiohttp and the harness (0.75 CPU-s), and every command that builds the container imported
    pydantic-settings, PyYAML and Werkzeug for dependency-injector integrations never used (0.1 s)."""
    # PyYAML is installed here (mkdocs's, a test dependency), else this would check less
    assert importlib.util.find_spec("yaml") is not None
    loaded = tmp_path / "modules.txt"  # (-X importtime would list the refused imports too)
    if args[0] == "audit":  # a ledger with a record in it
        from agy_harness.adapters.store.ledger_file import FileLedger
        from agy_harness.ports.protocols import LedgerEntry

        ledger = FileLedger(tmp_path / "ledger")
        ledger.record_now(LedgerEntry(type="decision", body={"gate_id": "g", "verdict": "allow"}))
        ledger.close()
    run = subprocess.run(
        [sys.executable, "-c", LOADED, str(loaded), *(a.format(tmp=tmp_path) for a in args)],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "XDG_CONFIG_HOME": str(tmp_path),
            "AGY_HARNESS_LEDGER_DIR": str(tmp_path / "ledger"),
        },
    )
    assert run.returncode == code, run.stderr[-2000:]
    imported = set(loaded.read_text().split())
    assert not unused & imported, unused & imported
    assert "Traceback" not in run.stderr


# -- replay: what is wrong with the input, in words ------------------------------------------


def test_replay_reads_standard_input() -> None:
    step = (ROOT / "adapters/simulator/shapes/user_input.json").read_text()
    run = run_cli("replay", "-", stdin=step)
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert "user_message" in [e["type"] for e in events]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "empty.json:1:1: empty: no JSON in it"),
        ("null\n", "empty.json:1:1: expected a JSON object or list, got null"),
        ("42", "empty.json:1:1: expected a JSON object or list, got a number"),
        ("hello\n", "empty.json:1:1: not valid JSON (Expecting value)"),
    ],
)
def test_replay_names_what_is_wrong_with_a_file(tmp_path: Path, content: str, said: str) -> None:
    (tmp_path / "empty.json").write_text(content)
    run = run_cli("replay", str(tmp_path / "empty.json"))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == f"agy-harness replay: {tmp_path}/{said}\n"


def test_replay_of_a_missing_or_unreadable_file_names_no_line(tmp_path: Path) -> None:
    run = agy_harness("replay", str(tmp_path / "nope.json"))
    assert run.returncode == 2
    assert run.stderr == f"agy-harness replay: cannot read {tmp_path}/nope.json: No such file or directory\n"
    (tmp_path / "bytes.json").write_bytes(b"\xff\xfe{}")
    run = agy_harness("replay", str(tmp_path / "bytes.json"))
    assert run.returncode == 2 and "not UTF-8 text" in run.stderr and ":0" not in run.stderr


def test_replay_says_so_when_the_input_holds_no_step(tmp_path: Path) -> None:
    (tmp_path / "status.jsonl").write_text(
        '{"update": {"conversationId": "c", "status": "CASCADE_RUN_STATUS_IDLE"}}\n'
    )
    run = run_cli("replay", str(tmp_path / "status.jsonl"))
    assert run.returncode == 0 and run.stdout == ""
    assert (
        run.stderr
        == "agy-harness replay: no events: the input holds no agy steps (only stream status, or none)\n"
    )


def test_the_simulator_writes_one_full_stop() -> None:
    """ "The user wrote: Say hello in one short sentence.." and "You chose: ... logic.." (item 11)."""
    from agy_harness.adapters.simulator.scenarios import sentence

    assert sentence("Say hello in one short sentence.") == "Say hello in one short sentence."
    assert sentence("You chose: Start with the core logic.") == "You chose: Start with the core logic."
    assert sentence("You chose: nothing") == "You chose: nothing."
