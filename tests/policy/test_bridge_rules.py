"""Rules answering gates on the simulator, through the whole harness: an allow answers for the human
(nobody is asked, the notice names the rule and its file:line), a deny tells agy the message and can
never be approved afterwards (Session.answer is refused), and rules that fail to load turn off with a
warning notice at the session's start (everything is asked, as without rules)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agy_harness.adapters.policy.files import Tier, load_policy
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.interactions import allowed, deny_instruction
from agy_harness.composition.root.session import open_session
from agy_harness.ports.errors import AnswerNotDelivered
from agy_harness.ports.events import Event, GateOpened, Notice
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import FAST, harness_on, run_turn

RULES = """\
[[rule]]
id = "git-status"
decision = "allow"
command = ["git", "status"]
match = ["git status"]
not_match = ["git status; rm -rf build"]

[[rule]]
id = "no-rm"
decision = "deny"
command = ["rm"]
message = "never delete files; move them to ./trash instead"
match = ["bash -c 'rm -rf build'"]
"""


def policy_of(tmp_path: Path, text: str = RULES):  # type: ignore[no-untyped-def]
    (tmp_path / "rules.toml").write_text(text, encoding="utf-8")
    return load_policy(tiers=[Tier(2, tmp_path)])


def notices(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


async def test_an_allow_rule_answers_for_the_human_and_says_so(sim: Simulator, tmp_path: Path) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=policy_of(tmp_path)) as session:
        await run_turn(session, sink, "run: git status")
    assert sink.asked == []  # nobody was asked
    [result] = [e for e in sink.events if e.type == "tool_result"]
    assert not result.is_error and "On branch main" in result.output  # type: ignore[union-attr]
    assert f"allowed by rule git-status ({tmp_path / 'rules.toml'}:1)" in notices(sink.events)


async def test_a_command_no_rule_allows_is_asked_as_today(sim: Simulator, tmp_path: Path) -> None:
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=policy_of(tmp_path)) as session:
        await sink.answers.put(GateAnswer(allow=True))
        await run_turn(session, sink, "run: git status --short | sh")
    assert [g.permission.command_line for g in sink.asked if g.permission] == ["git status --short | sh"]


async def test_a_denied_gate_tells_agy_why_and_cannot_be_approved_through_the_api(
    sim: Simulator, tmp_path: Path
) -> None:
    refused: list[str] = []
    async with open_session(
        pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, policy=policy_of(tmp_path)
    ) as s:
        await s.send("run: rm -rf build")
        events: list[Event] = []
        async for event in s.events():
            events.append(event)
            if isinstance(event, GateOpened):
                with pytest.raises(AnswerNotDelivered):
                    await s.answer(event.gate_id, True)  # a human's approve, from any surface
                refused.append(event.gate_id)
            if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                break
    assert refused
    [step] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
    [interaction] = step["completedInteractions"]
    assert not allowed(interaction["response"])
    assert deny_instruction(interaction["response"]) == "never delete files; move them to ./trash instead"
    texts = notices(events)
    assert any(t.startswith("denied by rule no-rm (") for t in texts)
    assert any("denied by rule no-rm" in t and "refused" in t.lower() for t in texts), texts


async def test_rules_that_fail_to_load_are_off_and_the_session_says_why(
    sim: Simulator, tmp_path: Path
) -> None:
    broken = RULES.replace('match = ["git status"]', 'match = ["git log"]')  # an example that fails
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=policy_of(tmp_path, broken)) as session:
        await sink.answers.put(GateAnswer(allow=True))
        await run_turn(session, sink, "run: git status")
    assert [g.permission.command_line for g in sink.asked if g.permission] == ["git status"]  # asked
    [warning] = [e for e in sink.events if isinstance(e, Notice) and e.level == "warning"]
    assert warning.text.startswith("rules are off, every gate is asked: ")
    assert "git-status" in warning.text and "'git log' should match but does not" in warning.text


async def test_a_deny_rule_reaches_agy_on_a_run_command_gate_whose_answer_carries_no_reason(
    sim: Simulator, tmp_path: Path
) -> None:
    """agy's ``runCommand`` answer has no ``userDenyInstruction``: a rule's denial there is a plain
    ``confirm: false`` (the message shown on every surface), never a refused answer that leaves the
    gate waiting for agy's terminal."""
    sink = RecordingSink()
    async with harness_on(sim, sink, policy=policy_of(tmp_path)) as session:
        await run_turn(session, sink, "kind: runCommand rm -rf build")
    assert sink.asked == []  # no human was asked: the rule denied it
    [step] = [x for x in sim.steps() if x["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
    [interaction] = step["completedInteractions"]
    assert interaction["response"]["runCommand"].get("confirm") is not True
    assert ("rm -rf build", sim.workspace) not in sim.executed
    texts = notices(sink.events)
    assert any(t.startswith("denied by rule no-rm (") and "never delete files" in t for t in texts), texts
