"""`agy-harness policy`: `test FILE` checks a file's examples (exit 1 naming the failure), `test`
alone reads the session's tiers and runs them over recorded gates, `explain` shows the decision, the
line as the shell reads it and the rules that match, `propose` prints a rule `test` accepts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.in_process import run_cli

from .test_bridge_rules import RULES


def policy(*args: str, cwd: Path | None = None, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command run in this process (tests/in_process.py): what it prints is the subject here; its
    exit codes and one-line errors as a process are tests/cli/test_rough_edges.py's."""
    env = {"XDG_CONFIG_HOME": str(home)} if home is not None else None
    return run_cli("policy", *args, env=env, cwd=cwd)


def test_test_checks_a_files_examples_and_fails_on_one_that_does_not_hold(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text(RULES, encoding="utf-8")
    run = policy("test", str(good))
    assert run.returncode == 0 and run.stdout == f"ok   {good}: 2 rules, 3 examples hold\n"
    bad = tmp_path / "bad.toml"
    bad.write_text(RULES.replace('not_match = ["git status; rm -rf build"]', 'not_match = ["git status -s"]'))
    run = policy("test", str(good), str(bad))
    assert run.returncode == 1
    assert f"FAIL git-status ({bad}:1): example 'git status -s' should not match but does" in run.stdout


def test_test_alone_runs_the_tiers_over_recorded_gates(tmp_path: Path) -> None:
    rules = tmp_path / "cfg" / "agy-harness" / "policy"
    rules.mkdir(parents=True)
    (rules / "base.toml").write_text('[[rule]]\nid = "pwd"\ndecision = "allow"\ncommand = ["pwd"]\n')
    run = policy("test", "--workspace", str(tmp_path), home=tmp_path / "cfg")
    assert run.returncode == 0, run.stderr
    assert "ok   1 rules from 1 files" in run.stdout
    assert f"allow 'pwd': allowed by rule pwd ({rules / 'base.toml'}:1)" in run.stdout  # the recorded gate
    (rules / "broken.toml").write_text("nope")
    run = policy("test", "--workspace", str(tmp_path), home=tmp_path / "cfg")
    assert run.returncode == 1 and run.stdout.startswith("FAIL the rules are off: ")


def test_explain_shows_the_decision_the_parts_and_the_rules(tmp_path: Path) -> None:
    (tmp_path / "r.toml").write_text(RULES, encoding="utf-8")
    run = policy("explain", "git status && bash -c 'rm -rf build'", "--rules", str(tmp_path / "r.toml"))
    assert run.returncode == 0
    assert run.stdout.splitlines()[0].startswith("decision: deny (denied by rule no-rm (")
    assert "  ['rm', '-rf', 'build']  (via bash)" in run.stdout
    assert "  deny  no-rm (" in run.stdout and "git-status" not in run.stdout.split("rules that match:")[1]


def test_propose_prints_a_rule_that_test_accepts(tmp_path: Path) -> None:
    run = policy("propose", "pytest -q 'tests/a b'", "--cwd", "/work/p")
    assert run.returncode == 0, run.stderr
    (tmp_path / "always.toml").write_text(run.stdout, encoding="utf-8")
    assert 'command = ["pytest", "-q", "tests/a b"]' in run.stdout
    assert policy("test", str(tmp_path / "always.toml")).returncode == 0
    run = policy("propose", "ls | sh")
    assert run.returncode == 2 and run.stdout == ""  # bad input, as every policy action says it
    assert (
        run.stderr
        == "agy-harness policy: no rule proposed: the line runs several commands: approve them one by one\n"
    )


def test_explain_reads_a_gate_as_json_and_the_api_proposes(tmp_path: Path) -> None:
    from agy_harness.composition import policy_of, propose_rule
    from agy_harness.composition.root.policy import gate_of
    from agy_harness.ports.events import event_to_json

    gate = gate_of("git status", "/w").model_copy(update={"tool_name": "run_command"})
    (tmp_path / "r.toml").write_text(RULES, encoding="utf-8")
    run = policy("explain", json.dumps(event_to_json(gate)), "--rules", str(tmp_path / "r.toml"))
    assert run.returncode == 0 and run.stdout.startswith("decision: allow (allowed by rule git-status (")
    run = policy("explain", "{not json")
    assert run.returncode == 2 and run.stderr.startswith(
        "agy-harness policy: GATE: not a command line or a gate's JSON"
    )
    (tmp_path / "always.toml").write_text(propose_rule(gate), encoding="utf-8")
    proposed = policy_of([tmp_path / "always.toml"])
    assert proposed.decide(gate).verdict == "allow"
    assert proposed.decide(gate_of("git status", "/w/sub")).verdict == "ask"
