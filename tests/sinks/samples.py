"""One sample of every domain event type (the tests check that the list covers the Event union)."""

from __future__ import annotations

from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    PermissionRequest,
    Question,
    QuestionOption,
    ReasoningDelta,
    Rotation,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

C = "cascade-1"

QUESTION_GATE = GateOpened(
    id="t1/7/gate",
    cascade_id=C,
    step_key="t1/7",
    gate_id="gate-t1-7",
    kind="question",
    trajectory_id="t1",
    step_index=7,
    tool_name="ask_question",
    questions=(
        Question(
            question="Which part first?",
            options=(QuestionOption(id="1", text="Backend"), QuestionOption(id="2", text="Frontend")),
        ),
        Question(
            question="Which tests?",
            options=(QuestionOption(id="1", text="Unit"), QuestionOption(id="2", text="Integration")),
            multi_select=True,
        ),
    ),
)

PERMISSION_GATE = GateOpened(
    id="t1/9/gate",
    cascade_id=C,
    step_key="t1/9",
    gate_id="gate-t1-9",
    kind="permission",
    trajectory_id="t1",
    step_index=9,
    tool_name="run_command",
    permission=PermissionRequest(action="run", target="git status", command_line="git status", cwd="/repo"),
)

SAMPLES: list[Event] = [
    UserMessage(id="t1/x:e1/user", cascade_id=C, text="hello there"),
    StatusChanged(id="t1/1/status/running", cascade_id=C, status="running"),
    ModelChanged(id="t1/1/model", cascade_id=C, model="MODEL_X"),
    ReasoningDelta(
        id="t1/2/reasoning/0", cascade_id=C, delta="Thinking", message_id="t1/2", index=0, started=True
    ),
    TextDelta(id="t1/2/delta/0", cascade_id=C, delta="Hel", message_id="t1/2", index=0),
    TextDelta(id="t1/2/delta/1", cascade_id=C, delta="lo!", message_id="t1/2", index=1, final=True),
    AssistantMessage(id="t1/2/text", cascade_id=C, text="Hello!", message_id="t1/2"),
    ToolCall(
        id="t1/3/call",
        cascade_id=C,
        call_id="t1/3",
        name="run_command",
        arguments={"CommandLine": "ls -la", "Cwd": "/tmp/é"},
    ),
    ToolResult(id="t1/3/result", cascade_id=C, call_id="t1/3", name="run_command", output="total 0\n"),
    Usage(
        id="t1/3/usage",
        cascade_id=C,
        cumulative_input_tokens=120,
        cumulative_output_tokens=30,
        cumulative_cache_read_input_tokens=7,
        model="MODEL_X",
    ),
    PERMISSION_GATE,
    GateWithdrawn(id="t1/9/gate/withdrawn", cascade_id=C, gate_id="gate-t1-9", reason="answered in the TUI"),
    Notice(id="t1/9/notice", cascade_id=C, level="warning", text="something to see"),
    Rotation(id="c1/rotation/c2", cascade_id=C, old_cascade_id=C, new_cascade_id="cascade-2"),
    SubagentStarted(
        id="t1/5/subagent/child-1", cascade_id=C, child_cascade_id="child-1", parent_call_id="t1/5"
    ),
    StatusChanged(id="t1/4/status/idle", cascade_id=C, status="idle"),
]
