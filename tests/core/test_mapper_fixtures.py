"""Every recorded fixture through the mapper, with the exact events it must give."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import EVENT_ADAPTER, Event

from .fixtures import CASCADE, TRAJ, fixture, names


def run(*steps: Any) -> list[Event]:
    return Reconciler(CASCADE).feed_all(steps)


def brief(events: list[Event]) -> list[tuple[Any, ...]]:
    """Each event as (type, id relative to the trajectory, the fields that matter for its type)."""
    out: list[tuple[Any, ...]] = []
    for e in events:
        rel = e.id.removeprefix(TRAJ + "/")
        d = e.model_dump()
        keep = {
            "status": ("status",),
            "user_message": ("text",),
            "assistant_message": ("text", "message_id", "is_error"),
            "tool_call": ("call_id", "name", "arguments"),
            "tool_result": ("call_id", "name", "is_error"),
            "usage": (
                "cumulative_input_tokens",
                "cumulative_output_tokens",
                "cumulative_cache_read_input_tokens",
                "model",
            ),
            "model_change": ("model",),
            "gate_opened": ("gate_id", "kind", "step_index", "tool_name"),
            "text_delta": ("delta", "index", "final"),
        }[e.type]
        out.append((e.type, rel, *(d[k] for k in keep)))
    return out


CWD = "/Users/bryanli/.gemini/antigravity-cli/scratch"
RUN_ARGS = {"CommandLine": "pwd", "Cwd": CWD, "WaitMsBeforeAsync": 2000}
ASK_ARGS = json.loads(fixture("ask_question_done")["metadata"]["toolCall"]["argumentsJson"])
del ASK_ARGS["toolAction"], ASK_ARGS["toolSummary"]
for _q in ASK_ARGS["questions"]:  # the stream strips it: not part of the committed tool_call
    del _q["is_multi_select"]
GATE = f"{CASCADE}/{TRAJ}"
U = "u:1df76a5f-0318-4c71-b31d-7e3b51a3d981"

EXPECTED: dict[str, list[tuple[Any, ...]]] = {
    "user_input": [
        ("status", f"{U}/status/running", "running"),
        ("model_change", f"{U}/model", "MODEL_PLACEHOLDER_M20"),
        ("user_message", f"{U}/user", "Say hello in one short sentence."),
    ],
    "conversation_history": [],
    "checkpoint": [],  # its own modelUsage is NOT counted
    "planner_response_text": [
        ("status", "2/status/running", "running"),
        (
            "assistant_message",
            "2/assistant",
            "Hello! I am Antigravity, your AI coding assistant, ready to help you with your tasks.",
            "bot-643b4808-363a-4943-bcd2-bb6a7a29f2fd",
            False,
        ),
        ("usage", "2/usage", 17161, 65, 0, "MODEL_PLACEHOLDER_M20"),
        ("status", "2/status/idle", "idle"),
    ],
    # a DONE planner with no text is a tool dispatch: usage, but the turn stays open
    "planner_response_tool_call_run_command": [
        ("status", "5/status/running", "running"),
        ("usage", "5/usage", 1031, 418, 16267, "MODEL_PLACEHOLDER_M20"),
    ],
    "planner_response_tool_call_ask_question": [
        ("status", "11/status/running", "running"),
        ("usage", "11/usage", 2427, 344, 16248, "MODEL_PLACEHOLDER_M20"),
    ],
    "stream_planner_tool_call": [
        ("status", "5/status/running", "running"),
        ("usage", "5/usage", 3649, 178, 20366, "MODEL_PLACEHOLDER_M71"),
    ],
    "stream_planner_text_done": [
        ("status", "13/status/running", "running"),
        (
            "assistant_message",
            "13/assistant",
            fixture("stream_planner_text_done")["plannerResponse"]["modifiedResponse"],
            "bot-8aa1ae92-622b-46ad-b13b-f6ee0bbbf11b",
            False,
        ),
        ("usage", "13/usage", 13614, 472, 12205, "MODEL_PLACEHOLDER_M71"),
        ("status", "13/status/idle", "idle"),
    ],
    "run_command_waiting": [
        ("status", "6/status/running", "running"),
        # the gate's id names its step and its request (the digest: core/binding.py)
        ("gate_opened", "6/gate/65e3a88cb1a0", f"{GATE}/6/65e3a88cb1a0", "permission", 6, "run_command"),
    ],
    "run_command_done": [
        ("status", "6/status/running", "running"),
        ("tool_call", "6/call", f"{TRAJ}/6", "run_command", RUN_ARGS),
        ("tool_result", "6/result", f"{TRAJ}/6", "run_command", False),
    ],
    "run_command_error": [
        ("status", "6/status/running", "running"),
        ("tool_call", "6/call", f"{TRAJ}/6", "run_command", RUN_ARGS),
        ("tool_result", "6/result", f"{TRAJ}/6", "run_command", True),
    ],
    "stream_run_command_done": [
        ("status", "6/status/running", "running"),
        (
            "tool_call",
            "6/call",
            f"{TRAJ}/6",
            "run_command",
            {"CommandLine": "git status && git log -n 5 --oneline", "Cwd": CWD, "WaitMsBeforeAsync": 5000},
        ),
        ("tool_result", "6/result", f"{TRAJ}/6", "run_command", False),
    ],
    "ask_question_waiting": [
        ("status", "12/status/running", "running"),
        ("gate_opened", "12/gate/8d5dbd870243", f"{GATE}/12/8d5dbd870243", "question", 12, "ask_question"),
    ],
    "ask_question_done": [
        ("status", "12/status/running", "running"),
        ("tool_call", "12/call", f"{TRAJ}/12", "ask_question", ASK_ARGS),
        ("tool_result", "12/result", f"{TRAJ}/12", "ask_question", False),
    ],
    "list_directory_done": [
        ("status", "10/status/running", "running"),
        ("tool_call", "10/call", f"{TRAJ}/10", "list_dir", {"DirectoryPath": CWD}),
        ("tool_result", "10/result", f"{TRAJ}/10", "list_dir", False),
    ],
    # the stream strips metadata.toolCall: name from the type, args from the typed body via argumentsOrder
    "stream_list_directory_done": [
        ("status", "8/status/running", "running"),
        ("tool_call", "8/call", f"{TRAJ}/8", "list_dir", {"DirectoryPath": CWD}),
        ("tool_result", "8/result", f"{TRAJ}/8", "list_dir", False),
    ],
    "stream_view_file_done": [
        ("status", "16/status/running", "running"),
        ("tool_call", "16/call", f"{TRAJ}/16", "view_file", {"AbsolutePath": f"{CWD}/package.json"}),
        ("tool_result", "16/result", f"{TRAJ}/16", "view_file", False),
    ],
    # GENERIC keeps toolCall in the stream; arguments from generic.args
    "stream_generic_done": [
        ("status", "40/status/running", "running"),
        ("tool_call", "40/call", f"{TRAJ}/40", "manage_subagents", {"Action": "list"}),
        ("tool_result", "40/result", f"{TRAJ}/40", "manage_subagents", False),
    ],
}


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(EXPECTED) == names()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_maps_to_exact_events(name: str) -> None:
    events = run(fixture(name))
    assert brief(events) == EXPECTED[name]
    for e in events:  # every event survives its own JSON round trip, with all fields
        assert EVENT_ADAPTER.validate_python(e.model_dump(mode="json")) == e
        assert e.cascade_id == CASCADE


def test_tool_outputs() -> None:
    [_, _, result] = run(fixture("run_command_done"))
    assert result.output == f"{CWD}\n"  # type: ignore[union-attr]
    [_, _, result] = run(fixture("run_command_error"))
    assert "did not complete" in result.output  # type: ignore[union-attr]
    [_, _, result] = run(fixture("stream_generic_done"))
    assert result.output.startswith("You have 4 active subagent(s):")  # type: ignore[union-attr]
    [_, _, result] = run(fixture("list_directory_done"))
    assert json.loads(result.output)["results"][1] == {"name": "diff.patch", "sizeBytes": "40083"}  # type: ignore[union-attr]
    [_, _, result] = run(fixture("ask_question_done"))
    assert json.loads(result.output)["questions"][0]["selectedOptionIds"] == ["4"]  # type: ignore[union-attr]


def test_poll_and_stream_shapes_of_step_6_give_the_same_call_id() -> None:
    poll = [e for e in run(fixture("run_command_done")) if e.type == "tool_call"]
    stream = [e for e in run(fixture("stream_run_command_done")) if e.type == "tool_call"]
    assert poll[0].call_id == stream[0].call_id == f"{TRAJ}/6"  # type: ignore[union-attr]
    assert poll[0].id == stream[0].id


def test_permission_gate_content() -> None:
    gate = run(fixture("run_command_waiting"))[1]
    assert gate.type == "gate_opened"
    assert gate.permission is not None
    assert (
        gate.permission.action,
        gate.permission.target,
        gate.permission.command_line,
        gate.permission.cwd,
    ) == ("command", "pwd", "pwd", CWD)
    assert gate.permission.description == "Running pwd command"


def test_question_gate_content_and_multi_select_merge() -> None:
    gate = run(fixture("ask_question_waiting"))[1]
    assert gate.type == "gate_opened"
    [q] = gate.questions
    assert q.question == "What type of project or improvement would you like to focus on?"
    assert [o.id for o in q.options] == ["1", "2", "3", "4"]
    assert q.options[3].text == "Analyze and refactor the files in the current scratch directory."
    assert q.multi_select is False
    step = fixture("ask_question_waiting")
    args = json.loads(step["metadata"]["toolCall"]["argumentsJson"])
    args["questions"][0]["is_multi_select"] = True
    step["metadata"]["toolCall"]["argumentsJson"] = json.dumps(args)
    gate = run(step)[1]
    assert gate.type == "gate_opened" and gate.questions[0].multi_select is True


def test_done_step_keeps_requested_interaction_but_is_not_a_gate() -> None:
    assert "requestedInteraction" in fixture("run_command_done")
    assert not [e for e in run(fixture("run_command_done")) if e.type == "gate_opened"]


def test_gate_withdrawn_when_step_leaves_waiting_then_call_and_result() -> None:
    events = run(fixture("run_command_waiting"), fixture("run_command_done"))
    assert [e.type for e in events] == ["status", "gate_opened", "gate_withdrawn", "tool_call", "tool_result"]
    assert events[2].gate_id == events[1].gate_id  # type: ignore[union-attr]
    assert events[2].reason == "answered"  # type: ignore[union-attr]
    events = run(fixture("ask_question_waiting"), fixture("run_command_error"), fixture("ask_question_done"))
    assert [e.type for e in events] == [
        "status",
        "gate_opened",
        "tool_call",
        "tool_result",
        "gate_withdrawn",
        "tool_call",
        "tool_result",
    ]


def test_checkpoint_usage_is_not_counted() -> None:
    events = run(fixture("planner_response_text"), fixture("checkpoint"), fixture("stream_planner_tool_call"))
    usage = [e for e in events if e.type == "usage"]
    assert [
        (u.cumulative_input_tokens, u.cumulative_output_tokens, u.cumulative_cache_read_input_tokens)  # type: ignore[union-attr]
        for u in usage
    ] == [(17161, 65, 0), (17161 + 3649, 65 + 178, 20366)]
