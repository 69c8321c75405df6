"""The rules' ports: CommandParser (tree-sitter-bash) never raises, whatever it is given, and says when
it does not understand; GatePolicy (the rule files) decides every gate, and asks for all of them when
its rules are off."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.adapters.policy.files import RulePolicy
from agy_harness.adapters.policy.shell import TreeSitterParser
from agy_harness.core.policy_match import RuleSet
from agy_harness.ports.events import GateOpened, PermissionRequest
from agy_harness.ports.policy import CommandParser, Decision, GatePolicy, ParsedCommand

PARSER = TreeSitterParser()


def test_the_adapters_fill_the_ports() -> None:
    assert isinstance(PARSER, CommandParser)
    assert isinstance(RulePolicy(RuleSet()), GatePolicy)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | st.text(alphabet="ab $(){}<>|&;'\"\\`\n#*~=-", max_size=60))
def test_the_parser_never_raises_and_a_line_it_reads_lists_what_runs(text: str) -> None:
    parsed = PARSER.parse(text)
    assert isinstance(parsed, ParsedCommand)
    assert parsed.understood == (parsed.reason == "")
    if parsed.understood:
        assert parsed.commands


@given(st.sampled_from(["question", "permission", "other"]), st.text(max_size=40), st.booleans())
@settings(max_examples=60, deadline=None)
def test_a_policy_that_is_off_asks_for_everything(kind: str, line: str, answerable: bool) -> None:
    gate = GateOpened(
        id="g", cascade_id="c", gate_id="g", kind=kind, trajectory_id="t", step_index=1,  # type: ignore[arg-type]
        permission=PermissionRequest(command_line=line), answerable=answerable,
    )  # fmt: skip
    decision = RulePolicy(RuleSet(off="x.toml: not TOML")).decide(gate)
    assert isinstance(decision, Decision) and decision.verdict == "ask"
    assert decision.reason == "the rules are off: x.toml: not TOML"
