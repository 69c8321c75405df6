""" "Always" never widens: the rule proposed for an approved command matches that request and its exact
equivalents (the same argv however it is quoted, in the same directory) and nothing else; it loads, with
the request as its first example; a request that cannot be pinned down gets no proposal."""

from __future__ import annotations

import shlex
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agy_harness.adapters.policy.shell import TreeSitterParser
from agy_harness.adapters.policy.wrappers import runs_another
from agy_harness.core.policy_match import RuleSet, decide, example_failures
from agy_harness.core.policy_propose import propose
from agy_harness.core.policy_rules import RuleError, rules_from_table
from agy_harness.ports.events import GateOpened, PermissionRequest

PARSER = TreeSitterParser()

#: command names (a shell, wrapper or runner runs another command: `sh && sh` is two approved shells,
#: `sg` alone a shell as another group; they are read through, never one plain command)
NAMES = st.from_regex(r"[a-z][a-z0-9_-]{0,7}", fullmatch=True).filter(lambda n: not runs_another(n))
ARGS = st.text(alphabet="abc-./ *$;|&'\"\\{},=~\t", min_size=0, max_size=8)
ARGV = st.tuples(NAMES, st.lists(ARGS, max_size=4)).map(lambda t: [t[0], *t[1]])
CWDS = st.sampled_from(["/w", "/w/sub", "/other", ""])


def gate(line: str, cwd: str = "/w") -> GateOpened:
    return GateOpened(
        id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
        tool_name="run_command", interaction="permission", permission=PermissionRequest(command_line=line, cwd=cwd),
    )  # fmt: skip


def ruleset_of(text: str) -> RuleSet:
    rules = rules_from_table(tomllib.loads(text), name="proposed.toml", text=text, tier=2)
    assert example_failures(rules, PARSER) == []  # it would load: its first example is the request
    return RuleSet(rules=rules)


def double_quoted(argv: list[str]) -> str:
    """Another spelling of the same argv: every word in double quotes."""
    return " ".join('"' + "".join("\\" + c if c in '"\\$`' else c for c in w) + '"' for w in argv)


def allowed(ruleset: RuleSet, line: str, cwd: str = "/w") -> bool:
    return decide(ruleset, gate(line, cwd), PARSER.parse(line)).verdict == "allow"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(approved=ARGV, other=ARGV, cwd=CWDS)
def test_a_proposed_rule_matches_the_approved_request_and_nothing_else(
    approved: list[str], other: list[str], cwd: str
) -> None:
    line = shlex.join(approved)
    text = propose(gate(line), PARSER.parse(line))
    ruleset = ruleset_of(text)
    assert allowed(ruleset, line)
    assert allowed(ruleset, double_quoted(approved))  # an exact equivalent
    assert allowed(ruleset, "  " + line + "  ")
    # another argv, or another directory: never
    assert allowed(ruleset, shlex.join(other), cwd) == (other == approved and cwd == "/w")
    # the approved command dressed up: never
    for dressed in (
        f"{line}; rm -rf ~", f"{line} && sh", f"{line} | sh", f"{line} extra", f"{line} > out",
        f"{line} < in", f"env {line}", f"FOO=1 {line}", f"timeout 5 {line}", f"sudo {line}",
        f"bash -c {shlex.quote(line)}", f"echo x | xargs {line}", f"{line} $(rm x)", f"{line} &\nrm x",
    ):  # fmt: skip
        assert not allowed(ruleset, dressed), dressed


@pytest.mark.parametrize(
    "line",
    [
        "ls; pwd",
        "ls | wc",
        "env ls",
        "FOO=1 ls",
        "ls > out",
        "ls $HOME",
        "ls *.py",
        "cat <<EOF\nx\nEOF",
        "ls $(pwd)",
    ],
)
def test_a_request_that_cannot_be_pinned_down_gets_no_proposal(line: str) -> None:
    with pytest.raises(RuleError):
        propose(gate(line), PARSER.parse(line))


def test_the_proposal_is_toml_with_the_request_as_its_first_example() -> None:
    text = propose(gate("pytest -q 'tests/a b'"), PARSER.parse("pytest -q 'tests/a b'"))
    [rule] = ruleset_of(text).rules
    assert rule.command == ("pytest", "-q", "tests/a b") and rule.exact and rule.cwd == ("/w",)
    assert rule.match[0] == {"command_line": "pytest -q 'tests/a b'", "cwd": "/w"}


def test_over_the_corpus_a_proposal_allows_no_other_line() -> None:
    """Every corpus line that gets a proposal: its rule allows that line, and of the others only those
    the shell reads as the very same argv (an exact equivalent), never another."""
    from .corpus import CASES

    lines = [line for line, _ in CASES if line.strip()]
    parsed = {line: PARSER.parse(line) for line in lines}
    proposed = 0
    for line in lines:
        try:
            text = propose(gate(line), parsed[line])
        except RuleError:
            continue
        proposed += 1
        ruleset = ruleset_of(text)
        argv = parsed[line].commands[0].argv
        for other in lines:
            if decide(ruleset, gate(other), parsed[other]).verdict == "allow":
                [part] = parsed[other].commands
                assert part.argv == argv, (line, other)
    assert proposed >= 50
