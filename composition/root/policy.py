"""The rules' tools for the ``policy`` command (the entry point reaches the adapters only through the
root): read one file with its examples, the session's tiers, a gate decided and explained, a proposal."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from agy_harness.adapters.policy.files import RulePolicy, Tier, load_policy, read_file, save_proposed, trust
from agy_harness.adapters.policy.shell import TreeSitterParser
from agy_harness.core.policy_match import RuleSet, rule_matches
from agy_harness.core.policy_propose import propose
from agy_harness.core.policy_rules import TIERS, Rule, RuleError
from agy_harness.ports.events import GateOpened, PermissionRequest
from agy_harness.ports.policy import Decision, ParsedCommand

__all__ = ["Explained", "RuleError", "check_file", "explain", "gate_of", "policy_of", "propose_rule"]


def check_file(path: Path) -> list[Rule]:
    """The rules of ``path`` with every example checked; raises RuleError naming what failed."""
    rules, _ = read_file(path, TIERS.index("user"), TreeSitterParser())
    return list(rules)


def policy_of(files: list[Path] | None = None, workspace: Path | None = None) -> RulePolicy:
    """The given files as one tier, or the session's tiers (``workspace``: the project's)."""
    if not files:
        return load_policy(workspace)
    parser = TreeSitterParser()
    rules: list[Rule] = []
    try:
        for path in files:
            rules.extend(read_file(path, TIERS.index("user"), parser)[0])
    except RuleError as exc:
        return RulePolicy(RuleSet(off=str(exc)), parser)
    return RulePolicy(RuleSet(rules=tuple(rules), rules_hash="given"), parser)


def gate_of(text: str, cwd: str = "") -> GateOpened:
    """A gate from its JSON (a ``gate_opened`` event), else a permission to run ``text``."""
    if text.lstrip().startswith("{"):
        return GateOpened.model_validate(json.loads(text))
    return GateOpened(
        id="cli", cascade_id="cli", gate_id="cli", kind="permission", trajectory_id="cli", step_index=0,
        interaction="permission", tool_name="run_command",
        permission=PermissionRequest(command_line=text, cwd=cwd),
    )  # fmt: skip


@dataclass
class Explained:
    decision: Decision
    parsed: ParsedCommand | None
    matched: list[Rule]


def explain(policy: RulePolicy, gate: GateOpened) -> Explained:
    line = gate.permission.command_line if gate.permission else ""
    parsed = policy.parser.parse(line) if line else None
    matched = [r for r in policy.ruleset.rules if rule_matches(r, gate, parsed)]
    return Explained(policy.decide(gate), parsed, matched)


def propose_rule(gate: GateOpened) -> str:
    """The narrowest rule for ``gate`` (TOML), checked: it loads and its example holds; RuleError if none."""
    line = gate.permission.command_line if gate.permission else ""
    parser = TreeSitterParser()
    return propose(gate, parser.parse(line) if line else None)


def approval_key(gate: GateOpened) -> str:
    """Which approvals are "identical" (digest-independent): the same argv as the shell reads it, in
    the same directory, of the same kind and tool; "" for a request that is not one plain command."""
    line = gate.permission.command_line if gate.permission else ""
    if not line:
        return ""
    parsed = TreeSitterParser().parse(line)
    if not parsed.understood or len(parsed.commands) != 1:
        return ""
    cwd = gate.permission.cwd if gate.permission else ""
    key = json.dumps([gate.kind, gate.tool_name, list(parsed.commands[0].argv), cwd], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


__all__ += ["Tier", "approval_key", "save_proposed", "trust"]
