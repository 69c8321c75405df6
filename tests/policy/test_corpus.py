"""The bypass corpus (tests/policy/corpus.py): every case gets the verdict a careful human expects,
so every deny holds and no allow widens; and the corpus is as large as the issue asks."""

from __future__ import annotations

import tomllib

import pytest

from agy_harness.adapters.policy.shell import TreeSitterParser
from agy_harness.core.policy_match import RuleSet, decide, example_failures
from agy_harness.core.policy_rules import rules_from_table
from agy_harness.ports.events import GateOpened, PermissionRequest

from .corpus import CASES, RULES

PARSER = TreeSitterParser()
RULESET = RuleSet(rules=rules_from_table(tomllib.loads(RULES), name="corpus.toml", text=RULES, tier=1))


def gate(line: str) -> GateOpened:
    return GateOpened(
        id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
        tool_name="run_command", interaction="permission", permission=PermissionRequest(command_line=line),
    )  # fmt: skip


def verdict(line: str) -> str:
    return decide(RULESET, gate(line), PARSER.parse(line) if line else None).verdict


def test_the_corpus_is_large_and_its_rules_examples_hold() -> None:
    assert len(CASES) >= 200
    assert len({c for c, _ in CASES}) == len(CASES), "a case is listed twice"
    assert example_failures(RULESET.rules, PARSER) == []


@pytest.mark.parametrize(("line", "expected"), CASES, ids=[repr(c)[:60] for c, _ in CASES])
def test_each_shape_gets_the_verdict_a_careful_human_expects(line: str, expected: str) -> None:
    assert verdict(line) == expected
