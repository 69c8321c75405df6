"""The rest of ACP's stable surface on ``agy-harness acp``, driven through the SDK's client side:
capabilities, session/list, session/resume, session/close, available commands, plans, the tool
cards of refused gates and answered questions, and the errors a user reads when agy is not there."""

from __future__ import annotations

import asyncio
import itertools
import socket
from typing import Any

import pytest
from acp import RequestError

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING, QUESTION_OPTIONS

from .helpers import RecordingClient, acp_agent, prompt
from .shared_agent import SHARED, SharedAgent

PACE = ("--sim-pace", "0.05")


async def _new(conn: Any, cwd: str = "/tmp") -> str:
    """A new session (``cwd``: agy's workspace; ``--sim`` works in the first session's)."""
    return str((await conn.new_session(cwd=cwd, mcp_servers=[])).session_id)


def _card(client: RecordingClient, sid: str, call_id: str) -> list[Any]:
    return [
        u
        for u in client.of(sid)
        if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id
    ]


@SHARED
async def test_initialize_advertises_what_works_and_nothing_else(sim_agent: SharedAgent) -> None:
    observed = sim_agent.observed  # (the agent was initialized by the module's editor)
    answer = next(e.message for e in observed if e.message.get("id") == 0 and "result" in e.message)
    caps = answer["result"]["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["sessionCapabilities"] == {"list": {}, "resume": {}, "close": {}}  # no fork, no delete
    assert caps["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": True}
    assert not any(caps.get("mcpCapabilities", {}).values())  # the client's MCP servers are not used


@SHARED
async def test_session_list_resume_and_close(sim_agent: SharedAgent) -> None:
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        await prompt(conn, sid, "Say hello in one short sentence.")
        listed = await conn.list_sessions()
        mine = next(s for s in listed.sessions if s.session_id == sid)
        workspace = "/tmp"  # --sim: the simulator works in the first session's directory
        assert mine.cwd == workspace
        assert mine.title == "Say Hello In One Request" and mine.updated_at  # agy's title for it
        assert listed.sessions[0].session_id == sid  # newest first
        assert [s.session_id for s in (await conn.list_sessions(cwd=workspace)).sessions] == [
            s.session_id for s in listed.sessions
        ]
        assert (await conn.list_sessions(cwd="/elsewhere")).sessions == []
        with pytest.raises(RequestError) as err:
            await conn.list_sessions(cursor="not-ours")
        assert err.value.code == -32602

        # resume: nothing replayed, the live session goes on (once the live session has told agy's
        # title, which it does after the turn: on a loaded machine that came after the resume's mark)
        await client.wait_for(lambda: any(s == sid and getattr(u, "title", None) for s, u in client.updates))
        before = len(client.updates)
        resumed = await conn.resume_session(cwd=workspace, session_id=sid, mcp_servers=[])
        assert resumed.config_options[0].id == "model"
        assert not [
            u
            for s, u in client.updates[before:]
            if s == sid and u.session_update != "available_commands_update"
        ]
        assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
        assert client.text(sid) == GREETING + GREETING  # the first turn's text was not sent again

        # close: the session is gone for this client, the conversation stays with agy
        await conn.close_session(session_id=sid)
        with pytest.raises(RequestError) as err:
            await prompt(conn, sid, "Say hello in one short sentence.")
        assert err.value.code == -32002
        await conn.close_session(session_id=sid)  # a second close succeeds
        assert sid in {s.session_id for s in (await conn.list_sessions()).sessions}
        await conn.load_session(cwd=workspace, session_id=sid, mcp_servers=[])  # and can be loaded again


@SHARED
async def test_agys_title_and_last_activity_are_the_session_info(sim_agent: SharedAgent) -> None:
    """``session_info_update``: agy's title for the conversation (``summary``) once it gave one, and
    its last activity (``lastModifiedTime``) when a turn is over, as ``session/list`` shows them."""
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        infos = lambda: client.of(sid, "session_info_update")  # noqa: E731
        await client.wait_for(lambda: bool(infos()))
        assert infos()[0].title is None and infos()[0].updated_at  # a new conversation: no title yet
        await prompt(conn, sid, "Say hello in one short sentence.")
        listed = next(s for s in (await conn.list_sessions()).sessions if s.session_id == sid)
        assert listed.title == "Say Hello In One Request"
        await client.wait_for(
            lambda: (infos()[-1].title, infos()[-1].updated_at) == (listed.title, listed.updated_at)
        )
        first = infos()[-1]
        await prompt(conn, sid, "Say hello again.")
        await client.wait_for(lambda: infos()[-1].updated_at != first.updated_at)
        assert infos()[-1].title == first.title  # agy keeps its title
        assert infos()[-1].updated_at > first.updated_at
        shown = [(u.title, u.updated_at) for u in infos()]
        assert all(a != b for a, b in itertools.pairwise(shown))  # sent on change only
        assert len(shown) <= 5  # not on every step of a turn (each one moves lastModifiedTime)


@SHARED
async def test_available_commands_and_the_model_command(sim_agent: SharedAgent) -> None:
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        await client.wait_for(lambda: bool(client.of(sid, "available_commands_update")))
        (update,) = client.of(sid, "available_commands_update")
        assert [c.name for c in update.available_commands] == ["model"]
        assert (await prompt(conn, sid, "/model")).stop_reason == "end_turn"
        assert "Gemini 3 Flash (`MODEL_PLACEHOLDER_M71`)" in client.text(sid)
        assert (await prompt(conn, sid, "/model gemini 3 flash")).stop_reason == "end_turn"
        (changed,) = client.of(sid, "config_option_update")
        assert changed.config_options[0].current_value == "MODEL_PLACEHOLDER_M71"
        assert client.text(sid).endswith("The next turns run on Gemini 3 Flash.")
        await prompt(conn, sid, "Say hello in one short sentence.")  # runs on the chosen model
        loaded = await conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        assert loaded.config_options[0].current_value == "MODEL_PLACEHOLDER_M71"


@SHARED
async def test_agys_task_list_is_the_plan(sim_agent: SharedAgent) -> None:
    client = RecordingClient(permission=lambda tc, o: _allow())
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        assert (await prompt(conn, sid, "make a task list and run: pytest")).stop_reason == "end_turn"
        plans = client.of(sid, "plan")
        assert [[(e.content, e.status) for e in p.entries] for p in plans] == [
            [("Read the code", "in_progress"), ("Write the tests", "pending"), ("Fix the bug", "pending")],
            [("Read the code", "completed"), ("Write the tests", "in_progress"), ("Fix the bug", "pending")],
        ]
        before = len(client.updates)
        await conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])  # the replay has it too
        replayed = [u for s, u in client.updates[before:] if s == sid and u.session_update == "plan"]
        assert [e.status for e in replayed[-1].entries] == ["completed", "in_progress", "pending"]


async def _allow() -> str:
    return "allow"


@SHARED
async def test_a_denied_command_goes_from_pending_to_failed(sim_agent: SharedAgent) -> None:
    async def deny(tool_call: Any, options: list[Any]) -> str:
        return "deny"

    client = RecordingClient(permission=deny)
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        await prompt(conn, sid, "run: rm -rf build")
        (_, asked, _) = client.permission_requests[0]
        statuses = [u.status for u in _card(client, sid, asked.tool_call_id) if u.status]
        assert statuses == ["pending", "failed"]  # never "in_progress" after a denial


@SHARED
async def test_an_answered_question_shows_the_answer_on_its_card(sim_agent: SharedAgent) -> None:
    async def second(tool_call: Any, options: list[Any]) -> str:
        return str(options[1].option_id)

    client = RecordingClient(permission=second)
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        await prompt(conn, sid, "ask: which part should we work on first?")
        (_, asked, _) = client.permission_requests[0]
        done = _card(client, sid, asked.tool_call_id)[-1]
        assert done.status == "completed"
        assert done.content[0].content.text == f"→ {QUESTION_OPTIONS[1]}"  # not agy's raw JSON


@SHARED
async def test_a_form_answer_with_several_options_and_a_write_in_shows_on_the_card(
    sim_agent_forms: SharedAgent,
) -> None:
    async def fill(message: str, mode: Any) -> dict[str, Any]:
        return {"q1": ["1", "3"], "q1_write_in": "and docs"}

    client = RecordingClient(form=fill)
    async with sim_agent_forms.editor(client) as conn:
        sid = await _new(conn)
        await prompt(conn, sid, "ask multiple: which checks?")
        (_, mode) = client.forms[0]
        text = _card(client, sid, mode.tool_call_id)[-1].content[0].content.text
        assert text.startswith("→ Linting, Unit tests") and "and docs" in text


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_gate_only_agys_terminal_can_answer_is_a_card_that_says_so() -> None:
    """A file-write review (no known answer payload): a pending card that says to answer in agy's
    terminal; the client is asked nothing, and the card follows what agy's terminal decided."""
    async with Simulator(pace=0.05) as agy:
        client = RecordingClient(permission=lambda tc, o: _allow())
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = await _new(conn, agy.workspace)
            turn = asyncio.create_task(prompt(conn, sid, "write the file notes.md"))
            said = lambda: [  # noqa: E731
                c.content.text
                for u in client.of(sid)
                if u.session_update in ("tool_call", "tool_call_update")
                for c in (u.content or [])
                if getattr(c, "type", "") == "content"
            ]
            await client.wait_for(lambda: "answer it there" in " ".join(said()))
            assert said() == [
                "agy waits for this in its own terminal: answer it there (this client cannot answer it)."
            ]
            cards = [u for u in client.of(sid, "tool_call") if u.status == "pending"]
            assert cards and cards[-1].kind == "other"
            assert client.permission_requests == [] and client.forms == []  # nobody is asked here
            await agy.resolve_in_terminal(sid)
            assert (await asyncio.wait_for(turn, 60)).stop_reason == "end_turn"
            assert client.text(sid).endswith("I wrote notes.md.")
            assert [u.status for u in _card(client, sid, cards[-1].tool_call_id)][-1] == "completed"
            assert client.permission_requests == []


async def test_no_agy_is_a_sentence_not_an_internal_error() -> None:
    client = RecordingClient()
    async with acp_agent(client, where=("--port", str(_closed_port()))) as conn:
        with pytest.raises(RequestError) as err:
            await _new(conn)
        assert err.value.code == -32001
        assert str(err.value).startswith("No agy is running for you: start agy in a terminal")
        assert err.value.data["reason"] == "no_agy"
        with pytest.raises(RequestError) as err:
            await conn.list_sessions()
        assert err.value.code == -32001


async def test_a_conversation_agy_does_not_have_is_gone_and_a_session_binds_agy_once() -> None:
    async with Simulator(pace=0.05) as agy:
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            before = len(agy.calls)
            with pytest.raises(RequestError) as err:
                await conn.load_session(cwd=agy.workspace, session_id="no-such-conversation", mcp_servers=[])
            assert err.value.code == -32002
            assert str(err.value).startswith("agy has no conversation no-such-conversation")
            assert err.value.data["reason"] == "conversation_gone"
            assert agy.calls[before:].count("Heartbeat") == 1  # told from "no agy" without a second bind

            # one bind per session (it was two: a probe, then the session bound agy again, asking
            # agy whether it hosts the conversation it had just started)
            before = len(agy.calls)
            sid = await _new(conn, agy.workspace)
            calls = agy.calls[before:]
            assert calls[: calls.index("StartCascade")].count("Heartbeat") == 1
            assert "GetConversationMetadata" not in calls
            before = agy.calls.count("GetConversationMetadata")  # a bind for a named conversation
            await conn.load_session(cwd=agy.workspace, session_id=sid, mcp_servers=[])
            assert agy.calls.count("GetConversationMetadata") == before + 1


@SHARED
async def test_the_editors_mcp_servers_are_not_used_and_the_editor_is_told(sim_agent: SharedAgent) -> None:
    """agy takes MCP servers only from its own config at start: none is advertised, and a session
    given some says so to the editor (it was a log line only)."""
    from acp.schema import HttpMcpServer, McpServerStdio

    servers = [
        McpServerStdio(name="files", command="/bin/true", args=[], env=[]),
        HttpMcpServer(name="docs", url="http://127.0.0.1:9/mcp", headers=[], type="http"),
    ]
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        sid = (await conn.new_session(cwd="/tmp", mcp_servers=servers)).session_id
        said = "agy-harness: this editor's MCP servers (files, docs) are not used"
        await client.wait_for(lambda: said in client.text(sid))
        plain = await _new(conn)
        await prompt(conn, plain, "Say hello in one short sentence.")
        assert "MCP" not in client.text(plain)  # no servers given, nothing said
        await conn.close_session(session_id=sid)
        await conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=servers[:1])
        await client.wait_for(lambda: "MCP servers (files) are not used" in client.text(sid))


@SHARED
async def test_the_permission_body_flags_a_look_alike_working_directory(sim_agent: SharedAgent) -> None:
    """The ACP permission's body says where the command runs, its look-alikes flagged
    (core.display.path_notes): a Cyrillic "і" (U+0456) in the cwd is named; the ASCII one is not."""
    bodies = []
    for cwd in ("/tmp/wiki", "/tmp/w\u0456ki"):
        client = RecordingClient()  # no answer: the request is cancelled (fails closed)
        async with sim_agent.editor(client) as conn:
            sid = await _new(conn)
            await prompt(conn, sid, f"run: `ls -la` in {cwd}")
            (_, asked, _) = client.permission_requests[0]
            bodies.append([c.content.text for c in asked.content or [] if c.type == "content"])
    plain, odd = bodies
    assert "in `/tmp/wiki`" in plain and not any("U+0456" in t for t in plain)
    assert "in `/tmp/w\u0456ki`" in odd and any("U+0456" in t for t in odd)
    assert plain != odd
