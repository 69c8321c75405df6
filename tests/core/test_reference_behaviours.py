"""Behaviours the reference harness (omnigent 0.19.1 antigravity_native, whose tests encode
live-verified agy behaviour) has and we lacked, and the gates agy >= 1.1.0 adds. Every step is built
from a recorded fixture, changed only where the quoted shape says so."""

from __future__ import annotations

from typing import Any

from agy_harness.core.reconciler import Reconciler
from agy_harness.core.rotation import rotation_target
from agy_harness.core.steps import parse_step, steps_from_update
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    Notice,
    ReasoningDelta,
    StatusChanged,
    ToolResult,
    UserMessage,
)
from agy_harness.ports.protocols import CascadeSummary

from .fixtures import CASCADE, fixture


def of(events: list[Event], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


# -- gates ---------------------------------------------------------------------------------------


def test_permission_gate_exposes_agys_persist_suggestion() -> None:
    [gate] = of(Reconciler(CASCADE).feed(fixture("run_command_waiting")), GateOpened)
    assert gate.kind == "permission" and gate.answerable and gate.interaction == "permission"
    assert gate.permission.persist_suggestion_type == "PERSIST_SUGGESTION_TYPE_SUGGESTED"
    assert gate.permission.suggested_persist_pattern == "pwd"
    assert gate.request["suggestedPersistPattern"] == "pwd"  # the raw request rides along


def _other_waiting(key: str = "fileReview") -> dict[str, Any]:
    """A WAITING step whose requestedInteraction is neither askQuestion nor permission (agy >= 1.1.0
    pauses for file-write diff review and plan/artifact approval; the field name is not recorded)."""
    step = fixture("run_command_waiting")
    step["requestedInteraction"] = {key: {"path": "/w/a.py", "diff": "@@ -1 +1 @@"}}
    return step


def test_an_unknown_waiting_kind_opens_a_generic_gate_with_a_notice_and_withdraws_it() -> None:
    r = Reconciler(CASCADE)
    out = r.feed(_other_waiting())
    [gate] = of(out, GateOpened)
    assert gate.kind == "other" and not gate.answerable
    assert gate.interaction == "fileReview" and gate.request == {"path": "/w/a.py", "diff": "@@ -1 +1 @@"}
    [notice] = of(out, Notice)
    # in words: the raw field stays in the event (gate.interaction), not in what a human reads; the
    # terminal is named once (issue 45)
    assert "fileReview" not in notice.text and notice.text.count("answer in agy's terminal") == 1
    assert "/w/a.py" in notice.text
    assert notice.level == "warning" and notice.id == f"{gate.id}/notice"
    assert r.feed(_other_waiting()) == []  # seen again: nothing new
    done = fixture("run_command_done")  # the same step, resolved in agy's terminal
    done["metadata"]["sourceTrajectoryStepInfo"] = _other_waiting()["metadata"]["sourceTrajectoryStepInfo"]
    [withdrawn] = of(r.feed(done), GateWithdrawn)
    assert withdrawn.gate_id == gate.gate_id and withdrawn.reason == "answered"


def test_a_waiting_step_without_any_request_is_no_gate() -> None:
    step = fixture("run_command_waiting")
    del step["requestedInteraction"]
    assert of(Reconciler(CASCADE).feed(step), GateOpened) == []


# -- the reference's behaviours ------------------------------------------------------------------


def test_a_command_that_printed_nothing_has_empty_output() -> None:
    step = fixture("run_command_done")
    del step["runCommand"]["combinedOutput"]  # proto-JSON omits the empty output
    [result] = of(Reconciler(CASCADE).feed(step), ToolResult)
    assert result.output == "" and not result.is_error


def test_a_done_planner_with_text_and_tool_calls_does_not_close_the_turn() -> None:
    step = fixture("planner_response_tool_call_run_command")
    step["plannerResponse"]["modifiedResponse"] = step["plannerResponse"]["response"] = "Let me check."
    r = Reconciler(CASCADE)
    r.feed(fixture("user_input"))
    out = r.feed(step)
    assert [m.text for m in of(out, AssistantMessage)] == ["Let me check."]
    assert [s.status for s in of(out, StatusChanged)] == []  # still running
    assert r.state.status == "running"
    # the text-only planner that follows closes it
    assert [s.status for s in of(r.feed(fixture("planner_response_text")), StatusChanged)] == ["idle"]


def _thinking(text: str, index: int = 13) -> dict[str, Any]:
    step = fixture("stream_planner_text_done")
    step["status"] = "CORTEX_STEP_STATUS_GENERATING"
    step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = index
    step["plannerResponse"] = {"messageId": step["plannerResponse"]["messageId"], "thinking": text}
    return step


def test_reasoning_goes_on_after_a_non_prefix_rewrite() -> None:
    r = Reconciler(CASCADE)
    got = []
    for thinking in ("Plan: read the file", "Plan: list the dir", "Plan: list the dir, then read"):
        got += [d.delta for d in of(r.feed(_thinking(thinking)), ReasoningDelta)]
    assert got == ["Plan: read the file", ", then read"]


def test_a_user_input_without_execution_id_is_keyed_by_its_created_at() -> None:
    step = fixture("user_input")
    del step["metadata"]["executionId"]
    parsed = parse_step(step)
    assert parsed is not None and parsed.key.execution_id == "t:" + step["metadata"]["createdAt"]
    [message] = of(Reconciler(CASCADE).feed(step), UserMessage)
    assert message.text == step["userInput"]["userResponse"]
    later = fixture("user_input")
    del later["metadata"]["executionId"]
    later["metadata"]["createdAt"] = "2099-01-01T00:00:00.000000Z"
    assert str(parse_step(later).key) != str(parsed.key)  # type: ignore[union-attr]


def test_a_user_input_without_text_opens_the_turn_but_is_no_message() -> None:
    step = fixture("user_input")
    step["userInput"]["userResponse"] = "  "
    step["userInput"]["items"] = []
    out = Reconciler(CASCADE).feed(step)
    assert of(out, UserMessage) == [] and [s.status for s in of(out, StatusChanged)] == ["running"]


def test_a_planner_error_under_planner_response_error_is_shown() -> None:
    step = fixture("planner_response_text")
    step["status"] = "CORTEX_STEP_STATUS_ERROR"
    step["plannerResponse"] = {"messageId": "m", "error": "RESOURCE_EXHAUSTED: quota"}
    out = Reconciler(CASCADE).feed(step)
    [message] = of(out, AssistantMessage)
    assert message.is_error and "RESOURCE_EXHAUSTED: quota" in message.text
    assert of(out, StatusChanged)[-1].reason == "RESOURCE_EXHAUSTED: quota"


def test_a_stream_data_frame_without_the_update_envelope_is_read() -> None:
    step = fixture("stream_planner_text_done")
    bare = {
        "conversationId": CASCADE,
        "mainTrajectoryUpdate": {"stepsUpdate": {"indices": [13], "steps": [step]}},
    }
    assert steps_from_update(bare) == steps_from_update({"update": bare}) == [step]


def test_a_non_cascade_sibling_trajectory_is_not_taken_for_clear() -> None:
    bound = CascadeSummary(cascade_id="a", last_user_input_time="2026-01-01T00:00:00Z")
    other = CascadeSummary(
        cascade_id="b",
        last_user_input_time="2026-01-01T00:00:09Z",
        trajectory_type="CORTEX_TRAJECTORY_TYPE_OTHER",
    )
    assert rotation_target("a", [bound, other]) is None
    cascade = other.model_copy(update={"trajectory_type": "CORTEX_TRAJECTORY_TYPE_CASCADE"})
    assert rotation_target("a", [bound, cascade]) == "b"
    assert rotation_target("a", [bound, other.model_copy(update={"trajectory_type": ""})]) == "b"  # older agy
