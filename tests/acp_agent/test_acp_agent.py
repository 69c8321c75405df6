"""``agy-harness acp --sim`` as a subprocess, driven by the official ACP SDK's client connection."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.connection import StreamDirection, StreamEvent

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING, LONG_TEXT, QUESTION_OPTIONS
from agy_harness.core.display import request_hash

from .helpers import RecordingClient, acp_agent, agy_harness_command, prompt
from .shared_agent import SHARED, SharedAgent

PACE = ("--sim-pace", "0.05")


async def _new(conn: Any, cwd: str = "/tmp") -> str:
    return str((await conn.new_session(cwd=cwd, mcp_servers=[])).session_id)


def _calls(client: RecordingClient, sid: str) -> dict[str, list[Any]]:
    """Every tool_call / tool_call_update per tool call id, in order."""
    out: dict[str, list[Any]] = {}
    for u in client.of(sid):
        if u.session_update in ("tool_call", "tool_call_update"):
            out.setdefault(u.tool_call_id, []).append(u)
    return out


@SHARED
async def test_a_text_turn_streams(sim_agent: SharedAgent) -> None:
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        response = await prompt(conn, sid, "Say hello in one short sentence.")
        assert response.stop_reason == "end_turn"
        chunks = client.of(sid, "agent_message_chunk")
        assert len(chunks) > 1  # streamed, not one committed blob
        assert client.text(sid) == GREETING
        assert client.text(sid, "agent_thought_chunk")  # agy's reasoning as thought chunks
        assert not client.of(sid, "user_message_chunk")  # the client's own prompt is not echoed
        assert response.usage is not None and response.usage.input_tokens > 0


@SHARED
async def test_an_allowed_and_a_denied_command(sim_agent: SharedAgent) -> None:
    async def policy(tool_call: Any, options: list[Any]) -> str:
        return "deny" if "rm " in tool_call.title else "allow"

    client = RecordingClient(permission=policy)
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        assert (await prompt(conn, sid, "run: git status")).stop_reason == "end_turn"
        (_, asked, options) = client.permission_requests[0]
        assert [(o.option_id, o.kind) for o in options] == [
            ("allow", "allow_once"),
            ("allow:conversation", "allow_always"),
            ("allow:global", "allow_always"),
            ("deny", "reject_once"),
        ]  # one allow per scope the gate lists (test_gate_scopes), and Deny
        assert asked.title == f"Run `git status` {request_hash('git status')}" and asked.kind == "execute"
        card = _calls(client, sid)[asked.tool_call_id]
        assert card[0].session_update == "tool_call" and card[0].status == "pending"  # shown before the ask
        assert card[0].raw_input["command_line"] == "git status"
        assert card[-1].status == "completed"
        assert "nothing to commit" in card[-1].content[0].content.text
        assert "ran" in client.text(sid)

        assert (await prompt(conn, sid, "run: rm -rf build")).stop_reason == "end_turn"
        (_, denied, _) = client.permission_requests[1]
        card = _calls(client, sid)[denied.tool_call_id]
        assert card[-1].status == "failed"
        assert "not run" in card[-1].content[0].content.text
        assert "You denied permission to run `rm -rf build`" in client.text(sid)


@SHARED
async def test_a_question_answered_with_a_permission_request(sim_agent: SharedAgent) -> None:
    async def pick(tool_call: Any, options: list[Any]) -> str:
        return options[1].option_id  # the second option

    client = RecordingClient(permission=pick)
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        response = await prompt(conn, sid, "ask: which part should we work on first?")
        assert response.stop_reason == "end_turn"
        (_, asked, options) = client.permission_requests[0]
        assert asked.title == "Which part should we work on first?"
        assert [o.name for o in options] == [*QUESTION_OPTIONS, "Decline to answer"]
        assert options[-1].kind == "reject_once"
        assert QUESTION_OPTIONS[1] in client.text(sid)

        # a multi-select question on a client without forms: one pick, and the title says so
        assert (await prompt(conn, sid, "ask multiple: which checks?")).stop_reason == "end_turn"
        (_, multi, _) = client.permission_requests[1]
        assert "cannot select several" in multi.title
        assert client.text(sid).endswith("You chose: Type checking.")


@SHARED
async def test_a_question_answered_with_a_form_refused_answers_asked_again(
    sim_agent_forms: SharedAgent,
) -> None:
    answers = iter([{"q1": []}, {"q1": ["1", "3"], "q1_write_in": "and docs"}])

    async def fill(message: str, mode: Any) -> dict[str, Any]:
        return next(answers)

    client = RecordingClient(form=fill)
    async with sim_agent_forms.editor(client) as conn:
        sid = await _new(conn)
        assert (await prompt(conn, sid, "ask multiple: which checks?")).stop_reason == "end_turn"
        assert len(client.forms) == 2  # the empty answer was refused by the one parser, then asked again
        schema = client.forms[0][1].requested_schema
        assert schema.properties["q1"].type == "array"
        assert [o.title for o in schema.properties["q1"].items.any_of] == [
            "Linting",
            "Type checking",
            "Unit tests",
            "Benchmarks",
        ]
        assert any("refused" in str(u) for u in client.of(sid, "tool_call_update"))
        assert "Linting, Unit tests" in client.text(sid) and "and docs" in client.text(sid)
        assert not client.permission_requests


@SHARED
async def test_cancel_mid_reply(sim_agent_slow: SharedAgent) -> None:
    client = RecordingClient()
    async with sim_agent_slow.editor(client) as conn:  # a ~6 s reply: room to cancel it
        sid = await _new(conn)
        turn = asyncio.create_task(prompt(conn, sid, "Write a long story about a lighthouse keeper."))
        await client.wait_for(lambda: bool(client.of(sid, "agent_message_chunk")))
        with pytest.raises(RequestError) as err:  # one prompt at a time per session
            await prompt(conn, sid, "Say hello in one short sentence.")
        assert err.value.code == -32600
        await conn.cancel(session_id=sid)
        response = await turn
        assert response.stop_reason == "cancelled"
        assert 0 < len(client.text(sid)) < len(LONG_TEXT)
        # the session takes the next turn
        assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
        assert client.text(sid).endswith(GREETING)


@SHARED
async def test_cancel_denies_a_parked_gate(sim_agent: SharedAgent) -> None:
    cancelled = asyncio.Event()

    async def wait_for_cancel(tool_call: Any, options: list[Any]) -> str | None:
        await cancelled.wait()
        return None  # what ACP asks of a client: answer pending requests "cancelled"

    client = RecordingClient(permission=wait_for_cancel)
    async with sim_agent.editor(client) as conn:
        sid = await _new(conn)
        turn = asyncio.create_task(prompt(conn, sid, "run: rm -rf build"))
        await client.wait_for(lambda: bool(client.permission_requests))
        await conn.cancel(session_id=sid)
        cancelled.set()
        assert (await turn).stop_reason == "cancelled"
        (_, asked, _) = client.permission_requests[0]
        await client.wait_for(lambda: _calls(client, sid)[asked.tool_call_id][-1].status == "failed")
        assert "not run" in _calls(client, sid)[asked.tool_call_id][-1].content[0].content.text
        # the refused command never flashes as running: pending, then failed (it was in_progress between)
        statuses = [u.status for u in _calls(client, sid)[asked.tool_call_id] if u.status]
        assert statuses == ["pending", "failed"]


async def test_a_gate_withdrawn_by_agy_cancels_the_request() -> None:
    seen: list[Any] = []
    withdrawn = asyncio.Event()

    async def slow_then_allow(tool_call: Any, options: list[Any]) -> str:
        if len(client.permission_requests) == 1:
            await withdrawn.wait()  # answer the first request only after agy withdrew it
        return "allow"

    client = RecordingClient(permission=slow_then_allow)

    def observe(event: Any) -> None:
        seen.append(event)
        if event.message.get("method") == "$/cancel_request":
            withdrawn.set()

    async with acp_agent(client, *PACE, "--sim-gate-timeout", "2", observe=_Observer(observe)) as conn:
        sid = await _new(conn)
        assert (await prompt(conn, sid, "run: pwd")).stop_reason == "end_turn"
        requests = [e.message for e in seen if e.message.get("method") == "session/request_permission"]
        cancels = [e.message for e in seen if e.message.get("method") == "$/cancel_request"]
        assert len(requests) >= 2  # agy re-asked after its timeout; the client was asked again
        assert cancels[0]["params"]["requestId"] == requests[0]["id"]
        assert (
            requests[1]["params"]["toolCall"]["toolCallId"] != requests[0]["params"]["toolCall"]["toolCallId"]
        )
        assert "ran" in client.text(sid)


class _Observer(list):  # type: ignore[type-arg]
    """A list the helper appends to, calling ``fn`` on each event."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def append(self, item: Any) -> None:
        super().append(item)
        self.fn(item)


@SHARED
async def test_session_load_replays_and_resumes(sim_agent: SharedAgent) -> None:
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        await _load_replays_and_resumes(conn, client, await _new(conn), "/tmp")


async def test_session_load_after_agys_title_came_late() -> None:
    """The ordering that made test_session_load_replays_and_resumes flaky under load, forced with a
    simulator the test runs: agy lists the conversation's title only once the prompt's answer reached
    the editor, and the calls a session/load makes reach agy only once the editor has that title. Were
    the load sent before the open session's title arrived, that title would come first in the load's
    updates (it did, every time, before the wait was for the title)."""
    async with Simulator(pace=0.05) as agy:
        client = TitleWatch()
        answered = asyncio.Event()  # the first prompt's answer reached the editor
        rpc = agy._rpc

        async def ordered(method: str, request: dict[str, Any]) -> dict[str, Any]:
            if answered.is_set() and method != "GetAllCascadeTrajectories":
                await client.titled.wait()  # (the load's calls) only once the editor has the title
            answer = await rpc(method, request)
            if method == "GetAllCascadeTrajectories" and any(
                s.get("summary") for s in answer["trajectorySummaries"].values()
            ):
                await answered.wait()  # the title, listed only once the prompt was answered
            return answer

        agy._rpc = ordered  # type: ignore[method-assign]
        async with acp_agent(client, where=("--port", str(agy.port)), observe=Answers(answered)) as conn:
            await _load_replays_and_resumes(conn, client, await _new(conn, agy.workspace), agy.workspace)


class TitleWatch(RecordingClient):
    """Also says when agy's title for the conversation reached the editor."""

    def __init__(self) -> None:
        super().__init__()
        self.titled = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        await super().session_update(session_id, update, **kw)
        if update.session_update == "session_info_update" and update.title:
            self.titled.set()


class Answers(list[StreamEvent]):
    """What the editor read and wrote; sets ``answered`` once a session/prompt's answer was read."""

    def __init__(self, answered: asyncio.Event) -> None:
        super().__init__()
        self.answered = answered
        self.prompts: set[Any] = set()

    def append(self, event: StreamEvent) -> None:
        super().append(event)
        m = event.message
        if event.direction == StreamDirection.OUTGOING and m.get("method") == "session/prompt":
            self.prompts.add(m["id"])
        elif (
            event.direction == StreamDirection.INCOMING and "method" not in m and m.get("id") in self.prompts
        ):
            self.answered.set()


async def _load_replays_and_resumes(conn: Any, client: RecordingClient, sid: str, cwd: str) -> None:
    await prompt(conn, sid, "Say hello in one short sentence.")
    # the open session lives until the load is accepted (a refused load leaves it open): its title,
    # sent once agy gave one, comes before the replay. Waited for by the title itself: the untitled
    # update session/new sent (agy's last activity) said nothing of it, and a title agy listed late
    # fell into the load's updates (test_session_load_after_agys_title_came_late)
    await client.wait_for(lambda: any(u.title for u in client.of(sid, "session_info_update")))
    before = len(client.updates)
    await conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
    replay = [u for s, u in client.updates[before:] if s == sid]
    kinds = [u.session_update for u in replay]
    assert kinds[0] == "user_message_chunk" and replay[0].content.text == "Say hello in one short sentence."
    assert "".join(u.content.text for u in replay if u.session_update == "agent_message_chunk") == GREETING
    # the live session continues after the replay: the next turn streams once, nothing replayed twice
    after = len(client.updates)
    assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
    again = [u for s, u in client.updates[after:] if s == sid]
    assert "".join(u.content.text for u in again if u.session_update == "agent_message_chunk") == GREETING
    assert not [u for u in again if u.session_update == "user_message_chunk"]

    with pytest.raises(RequestError) as err:
        await conn.load_session(cwd=cwd, session_id="no-such-conversation", mcp_servers=[])
    assert err.value.code == -32002


@SHARED
async def test_two_sessions_at_once(sim_agent: SharedAgent) -> None:
    async def allow(tool_call: Any, options: list[Any]) -> str:
        return "allow"

    client = RecordingClient(permission=allow)
    async with sim_agent.editor(client) as conn:
        a, b = await asyncio.gather(_new(conn), _new(conn))
        assert a != b
        ra, rb = await asyncio.gather(
            prompt(conn, a, "Say hello in one short sentence."), prompt(conn, b, "run: git status")
        )
        assert ra.stop_reason == rb.stop_reason == "end_turn"
        assert client.text(a) == GREETING
        assert "nothing to commit" in client.text(b) and GREETING not in client.text(b)
        assert not _calls(client, a) and _calls(client, b)
        assert [s for s, _, _ in client.permission_requests] == [b]


@SHARED
async def test_model_selection_from_agys_catalog(sim_agent: SharedAgent) -> None:
    client = RecordingClient()
    async with sim_agent.editor(client) as conn:
        new = await conn.new_session(cwd="/tmp", mcp_servers=[])
        (option,) = new.config_options
        assert option.id == "model" and option.category == "model"
        names = {o.value: o.name for o in option.options}
        assert names == {
            "MODEL_PLACEHOLDER_M20": "Gemini 3 Pro",
            "MODEL_PLACEHOLDER_M71": "Gemini 3 Flash",
            "MODEL_PLACEHOLDER_M50": "Gemini 2.5 Flash Lite",
        }
        assert option.current_value == "MODEL_PLACEHOLDER_M20"  # the catalog's default, not its first entry
        sid = new.session_id
        chosen = await conn.set_config_option(
            config_id="model", session_id=sid, value="MODEL_PLACEHOLDER_M71"
        )
        assert chosen.config_options[0].current_value == "MODEL_PLACEHOLDER_M71"
        await prompt(conn, sid, "Say hello in one short sentence.")
        # agy ran the turn on the chosen model: a fresh load reads it back from the conversation
        loaded = await conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        assert loaded.config_options[0].current_value == "MODEL_PLACEHOLDER_M71"
        with pytest.raises(RequestError) as err:
            await conn.set_config_option(config_id="model", session_id=sid, value="gpt-5")
        assert err.value.code == -32602


async def test_loading_a_conversation_parked_on_a_gate_asks_it_live() -> None:
    """agy (here a simulator the test runs, reached with ``--port``) already waits for a command typed
    in its own terminal; an editor loading that conversation gets the history, then the live question."""

    async def allow(tool_call: Any, options: list[Any]) -> str:
        return "allow"

    async with Simulator(pace=0.05) as agy:
        await agy.submit_user_turn("run: git status")
        await agy.wait_idle(timeout=30)  # parked on the permission gate
        client = RecordingClient(permission=allow)
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            await conn.load_session(cwd=agy.workspace, session_id=agy.cascade_id, mcp_servers=[])
            sid = agy.cascade_id
            assert client.of(sid, "user_message_chunk")[0].content.text == "run: git status"
            await client.wait_for(lambda: "nothing to commit" in client.text(sid))
            (_, asked, _) = client.permission_requests[0]
            assert asked.title == f"Run `git status` {request_hash('git status')}"
            assert _calls(client, sid)[asked.tool_call_id][-1].status == "completed"
            await agy.wait_idle(timeout=30)
            assert not agy.is_running(sid)


async def test_activity_in_agys_own_terminal_reaches_the_editor_across_a_clear() -> None:
    """Turns typed in agy's terminal (here: the simulator's) show in the loaded session, also after
    ``/clear`` moved the conversation to a new cascade."""
    async with Simulator(pace=0.05) as agy:
        await agy.submit_user_turn("Say hello in one short sentence.")
        await agy.wait_idle(timeout=30)
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(agy.port))) as conn:
            sid = agy.cascade_id
            await conn.load_session(cwd=agy.workspace, session_id=sid, mcp_servers=[])
            assert client.text(sid) == GREETING
            titles = lambda: [u.title for u in client.of(sid, "session_info_update")]  # noqa: E731
            await client.wait_for(lambda: bool(titles()))
            assert titles() == ["Say Hello In One Request"]  # agy's title for the loaded conversation
            await agy.submit_user_turn("/clear")
            await agy.submit_user_turn("autorun `ls`")
            new = agy.cascade_id
            assert new != sid
            done = lambda: [u for u in client.of(sid, "tool_call_update") if u.status == "completed"]  # noqa: E731
            await client.wait_for(lambda: bool(done()))
            assert "README.md" in done()[0].content[0].content.text
            assert [u.content.text for u in client.of(sid, "user_message_chunk")][-1] == "autorun `ls`"
            await agy.wait_idle(timeout=30)
            # the conversation goes on in the new cascade: its title, once agy gave it one
            await client.wait_for(lambda: titles()[-1] == "Autorun Ls Request")
            # the editor's next prompt goes to the new conversation
            assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
            assert client.text(sid).endswith(GREETING)
            assert [s["userInput"]["items"][0]["text"] for s in agy.steps(new) if "userInput" in s][-1] == (
                "Say hello in one short sentence."
            )


async def test_the_version_is_the_bound_agys_not_the_one_on_the_path(tmp_path: Path) -> None:
    """The agent asked ``agy --version`` of whichever agy is first on the PATH, not of the agy it
    binds: here a 1.0.4 agy (the simulator, as its own process) beside an ``agy`` 1.2.7 on the PATH."""
    fake = tmp_path / "agy"
    fake.write_text("#!/bin/sh\necho 'agy 1.2.7'\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    project = tmp_path / "project"
    project.mkdir()
    sim = await asyncio.create_subprocess_exec(
        *agy_harness_command(), "sim", "--profile", "1.0.4", "--pace", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, cwd=project,
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        port = ""
        async with asyncio.timeout(30):
            while not port:
                line = (await sim.stdout.readline()).decode()
                assert line, "the simulator ended before it printed its port"
                if line.startswith("port "):
                    port = line.split()[1]
        log: list[str] = []
        client = RecordingClient()
        async with acp_agent(client, where=("--port", port), env=env, log=log, verbose=True) as conn:
            await conn.new_session(cwd=str(project), mcp_servers=[])  # that agy's workspace: where it started
        assert "version gate: agy 1.0.4: polls its steps" in log[0]
        assert "1.2.7" not in log[0]
    finally:
        sim.terminate()
        await sim.wait()
