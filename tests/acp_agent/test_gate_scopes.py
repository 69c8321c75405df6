"""Issue 34's scopes in the editor, through the SDK's client against a simulator the test reads: a
permission request offers one option per scope the gate lists (named by the core's ``scope_label``)
plus Deny, and each option reaches agy as exactly that interaction (the simulator's record)."""

from __future__ import annotations

import asyncio
from typing import Any

from agy_harness.adapters.simulator import Simulator

from .helpers import RecordingClient, acp_agent, prompt

LS = "commands that start with 'ls'"


async def test_each_scope_option_reaches_agy_as_that_interaction() -> None:
    picks = iter(["allow", "allow:conversation", "allow:global", "deny"])

    async def pick(tool_call: Any, options: list[Any]) -> str:
        return next(picks)

    async with Simulator(pace=0.05) as agy:
        client = RecordingClient(permission=pick)
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = (await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id
            for command in ("run: ls -la", "run: ls src", "run: cat notes.md", "run: rm -rf build"):
                assert (await prompt(conn, sid, command)).stop_reason == "end_turn"
            (_, _, options) = client.permission_requests[0]
            assert [(o.option_id, o.kind, o.name) for o in options] == [
                ("allow", "allow_once", "Allow once"),
                ("allow:conversation", "allow_always", f"Allow for this conversation: {LS}"),
                ("allow:global", "allow_always", f"Always allow: {LS}"),
                ("deny", "reject_once", "Deny"),
            ]
            sent = [interaction["permission"] for _, interaction in agy.received]
            assert (
                sent
                == [
                    {"allow": True},  # once: agy's recorded allow, no scope
                    {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"},
                    {"allow": True, "scope": "PERMISSION_SCOPE_GLOBAL"},
                    {"allow": False},
                ][: len(sent)]
            )
            assert len(sent) == 4 and [c for c, _ in agy.executed] == ["ls -la", "ls src", "cat notes.md"]
            assert len(client.permission_requests) == 4


def _card(client: RecordingClient, sid: str, call_id: str | None = None) -> list[Any]:
    return [
        u
        for u in client.of(sid)
        if u.session_update in ("tool_call", "tool_call_update") and call_id in (None, u.tool_call_id)
    ]


async def _write_review(files: dict[str, str] | None) -> tuple[RecordingClient, Any, str]:
    """``write the file notes.md`` on a simulator: the file-write review's pending card (answered in
    agy's terminal: no public evidence of its answer payload, issue 34's kinds table)."""
    async with Simulator(pace=0.05) as agy:
        client = RecordingClient(files=files)
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = (await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id
            turn = asyncio.create_task(prompt(conn, sid, "write the file notes.md"))
            await client.wait_for(lambda: bool(client.of(sid, "tool_call")))
            await agy.resolve_in_terminal(sid)
            assert (await turn).stop_reason == "end_turn"
            return client, client.of(sid, "tool_call")[0], f"{agy.workspace}/notes.md"


async def test_a_file_write_review_shows_agys_change_as_a_diff() -> None:
    _client, card, path = await _write_review(None)
    assert card.status == "pending" and [loc.path for loc in card.locations] == [path]
    diffs = [c for c in card.content if c.type == "diff"]
    assert [(d.path, d.old_text, d.new_text) for d in diffs] == [
        (path, None, "# notes.md\n\nWritten by the simulator.\n")
    ]  # a new file: agy's diff only adds lines
    assert "answer it there" in card.content[0].content.text


async def test_with_the_editors_fs_the_buffer_decides_what_the_diff_is() -> None:
    """The client offers fs: the file's text is read through fs/read_text_file (the editor's unsaved
    buffer). It has text, so agy's additions are no new file: agy's diff is shown as agy gives it."""
    client, card, path = await _write_review({})  # fs offered, the file not there: a new file
    assert client.reads == [path] and [c.type for c in card.content] == ["content", "diff"]
    client, card, path = await _write_review({path: "unsaved text in the editor\n"})
    assert client.reads == [path]
    assert [c.type for c in card.content] == ["content", "content"]
    assert card.content[1].content.text == (
        "agy's change (as agy gives it):\n```\n+# notes.md\n+\n+Written by the simulator.\n```"
    )


async def test_a_file_permission_is_asked_with_its_path_and_its_deny_reaches_agy() -> None:
    """filePermission's answer message is evidenced (the IDE's descriptors, issue 45): the editor is
    asked, the card names the path (its location), the options are allow once, allow for this
    conversation (naming the path) and Deny, and the deny reaches agy as ``{allow: false}`` with the
    path. (It was a card that said to answer in agy's terminal, nobody asked.)"""
    async with Simulator(pace=0.05) as agy:
        client = RecordingClient(permission=lambda _call, _options: _deny())
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = (await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id
            assert (await prompt(conn, sid, "kind: filePermission file:///etc")).stop_reason == "end_turn"
            [(_, tool_call, options)] = client.permission_requests
            assert tool_call.title == "agy asks to access file:///etc (a directory) outside the workspace"
            assert [loc.path for loc in tool_call.locations] == ["/etc"]
            assert [(o.option_id, o.name) for o in options] == [
                ("allow", "Allow once"),
                ("allow:conversation", "Allow for this conversation: 'file:///etc'"),
                ("deny", "Deny"),
            ]
            [(_, sent)] = agy.received
            assert sent["filePermission"] == {"allow": False, "absolutePathUri": "file:///etc"}


async def _deny() -> str:
    return "deny"


class _SlowEditor(RecordingClient):
    """An editor whose fs/read_text_file never answers (a huge file it reads, or a message over the
    transport's line cap, which the agent discards: either way no answer comes)."""

    def __init__(self) -> None:
        super().__init__(files={})
        self.asked: list[dict[str, Any]] = []

    async def read_text_file(self, path: str, session_id: str, **params: Any) -> Any:
        self.reads.append(path)
        self.asked.append(params)
        await asyncio.Event().wait()  # never answers


async def test_an_editor_that_never_answers_a_read_does_not_wedge_the_session() -> None:
    """The file's text is asked for one line at most, and for a bounded time: an editor that never
    answers leaves agy's diff shown as agy gives it (no claim that the file is new), and the session
    goes on (on main the card never came and the turn never ended)."""
    async with Simulator(pace=0.05) as agy:
        client = _SlowEditor()
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = (await conn.new_session(cwd=agy.workspace, mcp_servers=[])).session_id
            turn = asyncio.create_task(prompt(conn, sid, "write the file notes.md"))
            await client.wait_for(lambda: bool(client.of(sid, "tool_call")), timeout=60)
            await agy.resolve_in_terminal(sid)
            assert (await turn).stop_reason == "end_turn"
    card = client.of(sid, "tool_call")[0]
    assert client.reads == [f"{agy.workspace}/notes.md"] and client.asked[0].get("limit") == 1
    assert [c.type for c in card.content] == ["content", "content"]  # no "diff" block: not a new file
    assert "agy's change (as agy gives it)" in card.content[1].content.text
