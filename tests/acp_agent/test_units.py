"""Pieces of the ACP agent that the simulator cannot exercise: agy's file-edit tools (no recording
has one), a failed turn (the simulator's model never fails), and the stdout guard."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from acp import RequestError

from agy_harness.composition.entrypoints.acp.gates import GateAsker
from agy_harness.composition.entrypoints.acp.mapping import (
    UpdateMapper,
    code_span,
    edit_diffs,
    gate_title,
    tool_kind,
    tool_title,
)
from agy_harness.composition.entrypoints.acp.sessions import AcpSession
from agy_harness.core.display import request_hash
from agy_harness.ports.events import (
    AssistantMessage,
    GateOpened,
    PermissionRequest,
    StatusChanged,
    ToolCall,
    ToolResult,
)


def test_edit_tools_show_diffs_and_keep_them_with_the_result() -> None:
    args = {
        "TargetFile": "/w/a.py",
        "ReplacementChunks": [{"TargetContent": "x = 1", "ReplacementContent": "x = 2"}],
    }
    assert tool_kind("multi_replace_file_content") == "edit"
    assert tool_title("multi_replace_file_content", args) == "Edit /w/a.py"
    (diff,) = edit_diffs("multi_replace_file_content", args)
    assert (diff.path, diff.old_text, diff.new_text) == ("/w/a.py", "x = 1", "x = 2")
    (new_file,) = edit_diffs("write_to_file", {"TargetFile": "/w/b.py", "CodeContent": "print()"})
    assert new_file.old_text is None and new_file.new_text == "print()"
    assert edit_diffs("run_command", {"CommandLine": "ls"}) == []

    mapper = UpdateMapper()
    base = {"id": "t/1/x", "cascade_id": "c", "step_key": "t/1"}
    (start,) = mapper.updates(
        ToolCall(**base, call_id="t/1", name="multi_replace_file_content", arguments=args)
    )
    assert start.session_update == "tool_call" and start.kind == "edit" and start.content[0].type == "diff"
    assert start.locations[0].path == "/w/a.py"
    (done,) = mapper.updates(
        ToolResult(**base, call_id="t/1", name="multi_replace_file_content", output="ok")
    )
    assert done.status == "completed" and [c.type for c in done.content] == ["diff", "content"]


def test_a_committed_message_adds_only_what_the_deltas_did_not_carry() -> None:
    from agy_harness.ports.events import TextDelta

    mapper = UpdateMapper()
    base = {"cascade_id": "c", "step_key": "t/2"}
    mapper.updates(TextDelta(id="d0", **base, delta="Hello ", message_id="m", index=0))
    (rest,) = mapper.updates(AssistantMessage(id="a", **base, text="Hello world", message_id="m"))
    assert rest.content.text == "world"
    (whole,) = mapper.updates(AssistantMessage(id="b", **base, text="Polled only", message_id="n"))
    assert whole.content.text == "Polled only"


class _Conn:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any) -> None:
        self.updates.append(update)


class _FailingTurn:
    """Fault injection: agy takes the turn, then its planner step fails (what the simulator never does)."""

    def __init__(self, owner: AcpSession) -> None:
        self.owner = owner
        self.cascade_id = owner.id

    async def send(self, text: str) -> str:
        async def play() -> None:
            base = {"cascade_id": self.cascade_id, "step_key": "t/3"}
            await self.owner.on_event(StatusChanged(id="s1", **base, status="running"))
            await self.owner.on_event(
                AssistantMessage(
                    id="e", **base, text="[error] quota exhausted", message_id="m", is_error=True
                )
            )
            await self.owner.on_event(
                StatusChanged(id="s2", **base, status="failed", reason="quota exhausted")
            )

        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(play()))
        return "rpc"


async def test_a_failed_turn_is_a_json_rpc_error_after_its_visible_text() -> None:
    async def no_cancel(session_id: str, tool_call_id: str) -> bool:
        return False

    conn = _Conn()
    session = AcpSession(conn, "c", cancel_outgoing=no_cancel, forms=False)
    session.session = _FailingTurn(session)  # type: ignore[assignment]
    with pytest.raises(RequestError) as err:
        await session.prompt("do it")
    assert err.value.code == -32603 and "quota exhausted" in err.value.data["details"]
    assert [u.content.text for u in conn.updates] == ["[error] quota exhausted"]
    assert session.turn is None  # the session takes the next prompt


def test_stray_output_goes_to_stderr_not_to_the_protocol() -> None:
    code = (
        "import os\n"
        "from agy_harness.composition.entrypoints.acp.transport import claim_stdout\n"
        "fd = claim_stdout()\n"
        "print('a stray print')\n"
        "os.system('echo a child process')\n"
        'os.write(fd, b\'{"jsonrpc": "2.0"}\\n\')\n'
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    assert out.stdout == b'{"jsonrpc": "2.0"}\n'
    assert b"a stray print" in out.stderr and b"a child process" in out.stderr


def test_what_the_human_approves_is_what_runs() -> None:
    """A command whose backticks, newline or escape codes would make its title read as something else
    is shown verbatim: code span long enough, control characters visible, the exact text in the body."""
    command = "ls `x` && echo ok\n\x1b[2Jrm -rf ~"
    gate = GateOpened(
        id="g",
        cascade_id="c",
        step_key="t/4",
        gate_id="c/t/4",
        kind="permission",
        trajectory_id="t",
        step_index=4,
        tool_name="run_command",
        permission=PermissionRequest(command_line=command),
    )
    title = gate_title(gate)
    # the core's one rendering rule (the exact request's hash at the end, outside the command's span)
    assert title == f"Run ``ls `x` && echo ok⏎\\x1b[2Jrm -rf ~`` {request_hash(command)}"
    assert "\n" not in title and "\x1b" not in title
    assert code_span("`a`") == "`` `a` ``"

    async def no_cancel(session_id: str, tool_call_id: str) -> bool:
        return False

    asker = GateAsker(_Conn(), "c", UpdateMapper(), cancel_outgoing=no_cancel, forms=False)
    body = asker._tool_call(gate).content[0].content.text
    assert "ls `x` && echo ok\n\\x1b[2Jrm -rf ~" in body and body.startswith("```")  # every line, visible
    assert "\x1b" not in body


def test_session_list_pages_and_the_cwd_rule() -> None:
    from acp import RequestError

    from agy_harness.composition.entrypoints.acp.listing import PAGE, session_list
    from agy_harness.ports.protocols import CascadeSummary

    summaries = [
        CascadeSummary(
            cascade_id=f"c{i:03}",
            last_modified_time=f"2026-01-01T00:00:{i % 60:02}.{i:03}Z",
            workspace_uris=("file:///home/me/my%20project",) if i % 2 else (),
        )
        for i in range(PAGE + 10)
    ]
    summaries.append(CascadeSummary(cascade_id="child", parent_id="c001"))  # a sub-agent: not listed
    first = session_list(summaries, agy_cwd="/srv/agy", cwd=None, cursor=None)
    assert len(first.sessions) == PAGE and first.next_cursor
    rest = session_list(summaries, agy_cwd="/srv/agy", cwd=None, cursor=first.next_cursor)
    assert len(rest.sessions) == 10 and rest.next_cursor is None
    ids = [s.session_id for s in first.sessions + rest.sessions]
    assert len(set(ids)) == PAGE + 10 and "child" not in ids
    cwds = {s.session_id: s.cwd for s in first.sessions + rest.sessions}
    assert cwds["c001"] == "/home/me/my project"  # agy's workspace folder, from its file: URI
    assert cwds["c002"] == "/srv/agy"  # else the directory agy runs in
    mine = session_list(summaries, agy_cwd="/srv/agy", cwd="/home/me/my project/", cursor=None)
    assert {s.cwd for s in mine.sessions} == {"/home/me/my project"}
    assert not session_list(
        summaries, agy_cwd=None, cwd="/srv/agy", cursor=None
    ).sessions  # no cwd: not listed
    with pytest.raises(RequestError):
        session_list(summaries, agy_cwd=None, cwd="relative", cursor=None)


def test_agys_titles_are_shown_by_the_one_rendering_rule() -> None:
    """A title is agy's text: in session/list and session_info_update its bidi override, invisible
    characters and line breaks are made visible, as on every card (core.display)."""
    from agy_harness.composition.entrypoints.acp.listing import session_list
    from agy_harness.composition.entrypoints.acp.session_info import info_update
    from agy_harness.ports.protocols import CascadeSummary

    hostile = CascadeSummary(
        cascade_id="c", title="Fix \u202etxt.exe\u200b\nrm -rf ~", workspace_uris=("file:///w",)
    )
    listed = session_list([hostile], agy_cwd=None, cwd=None, cursor=None).sessions[0].title
    assert listed == info_update(hostile).title
    assert listed is not None and "\\u202e" in listed and "\\u200b" in listed and "⏎" in listed
    assert not any(c in listed for c in "\u202e\u200b\n")
    assert info_update(CascadeSummary(cascade_id="c")).title is None  # no title yet: none sent


def test_plan_entries_from_agys_checklist() -> None:
    from agy_harness.composition.entrypoints.acp.plans import entries, plan_path

    text = "# Task\n\n- [x] Read\n* [/] Write\n1. [ ] Fix\n- plain bullet\n  - [~] Nested\n"
    assert [(e.content, e.status) for e in entries(text)] == [
        ("Read", "completed"),
        ("Write", "in_progress"),
        ("Fix", "pending"),
        ("Nested", "in_progress"),
    ]
    assert plan_path({"TargetFile": "/h/.gemini/antigravity-cli/brain/abc/task.md"})
    assert plan_path({"TargetFile": "/h/.gemini/antigravity/brain/abc/implementation_plan.md"})
    assert not plan_path({"TargetFile": "/work/project/task.md"})  # a workspace file, not agy's artifact
    assert not plan_path({"TargetFile": "/h/.gemini/antigravity-cli/brain/abc/walkthrough.md"})
