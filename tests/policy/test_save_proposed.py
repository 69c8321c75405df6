"""Saving a proposed rule the human confirmed (the board's "Save as my rule"): appended to the user
tier's proposed.toml (0600 in 0700) only if it loads, its examples hold and it matches the request
approved; otherwise RuleError with the reason and the file untouched."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agy_harness.adapters.policy.files import Tier, load_policy, save_proposed
from agy_harness.composition import propose_rule
from agy_harness.core.policy_rules import RuleError
from agy_harness.ports.events import GateOpened, PermissionRequest


def gate(line: str, cwd: str = "/srv/proj") -> GateOpened:
    return GateOpened(
        id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
        tool_name="run_command", permission=PermissionRequest(command_line=line, cwd=cwd),
    )  # fmt: skip


def test_saved_appended_private_and_refused_when_it_fails(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    target = save_proposed(propose_rule(gate("pytest -q")), gate("pytest -q"), env)
    assert target == tmp_path / "agy-harness" / "policy" / "proposed.toml"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    save_proposed(propose_rule(gate("ls -la")), gate("ls -la"), env)
    before = target.read_text()
    policy = load_policy(tiers=[Tier(2, target.parent)])
    assert [policy.decide(gate(x)).verdict for x in ("pytest -q", "ls -la", "ls")] == [
        "allow",
        "allow",
        "ask",
    ]
    rm = '[[rule]]\nid = "rm"\ndecision = "allow"\ncommand = ["rm"]\nmatch = ["rm x"]\n'
    for text, approved, why in (
        (rm, "ls -la", "does not match the request you approved"),  # edited into another rule
        (
            propose_rule(gate("make")).replace('"make"]', '"make", "all"]', 1),
            "make",
            "should match but does not",
        ),
        ("[[rule]]\nid = 1\n", "ls -la", "the rule"),
        (propose_rule(gate("ls -la")), "ls -la", "ls-la"),  # the same rule twice: the file would not load
    ):
        with pytest.raises(RuleError, match=why):
            save_proposed(text, gate(approved), env)
        assert target.read_text() == before  # nothing saved
