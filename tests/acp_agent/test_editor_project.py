"""The editor's project is the session's project, through the SDK's client: a relative ``cwd`` is
``-32602``; an agy that works elsewhere refuses ``session/new`` in a sentence naming both paths; the
session made lists under the editor's ``cwd`` (also the path it used, a symlink, and after the agent
restarted) and its tools work under it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from agy_harness.adapters.simulator import Simulator

from .helpers import RecordingClient, acp_agent, prompt
from .shared_agent import SHARED, SharedAgent


def _state(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "AGY_HARNESS_STATE_DIR": str(tmp_path / "state")}


async def _allow(tool_call: Any, options: list[Any]) -> str:
    return "allow"


@SHARED
async def test_a_relative_cwd_is_invalid_params(sim_agent: SharedAgent) -> None:
    client = RecordingClient()  # (refused before agy is bound: no state is kept)
    async with sim_agent.editor(client) as conn:
        with pytest.raises(RequestError) as err:
            await conn.new_session(cwd="project", mcp_servers=[])
        assert err.value.code == -32602 and "absolute" in str(err.value.data)


async def test_sim_sessions_work_and_list_in_the_editors_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    client = RecordingClient(permission=_allow)
    async with acp_agent(client, "--sim-pace", "0.05", env=_state(tmp_path)) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        assert (await prompt(conn, sid, "run: pwd")).stop_reason == "end_turn"
        # the command ran in the editor's project (the simulator's pwd prints its workspace)
        done = [u for u in client.of(sid, "tool_call_update") if u.status == "completed"]
        assert done[-1].content[0].content.text == f"```\n{project}\n```"
        listed = (await conn.list_sessions(cwd=str(project))).sessions
        assert listed[0].session_id == sid and {s.cwd for s in listed} == {str(project)}
        with pytest.raises(RequestError) as err:  # one agy, one workspace: another project is refused
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert err.value.code == -32004 and err.value.data["reason"] == "other_workspace"


async def test_an_agy_working_elsewhere_refuses_session_new_in_a_sentence(tmp_path: Path) -> None:
    async with Simulator(pace=0.05, workspace=str(tmp_path / "agys")) as agy:
        await agy.submit_user_turn("Say hello in one short sentence.")  # agy reports its workspace
        await agy.wait_idle(timeout=30)
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(agy.port)), env=_state(tmp_path)) as conn:
            before = len(agy.cascade_ids())
            with pytest.raises(RequestError) as err:
                await conn.new_session(cwd=str(tmp_path / "editors"), mcp_servers=[])
            assert err.value.code == -32004
            assert str(err.value) == (
                f"The agy running here works in {tmp_path / 'agys'}, not in {tmp_path / 'editors'}: agy "
                f"works in the directory it was started in. Open {tmp_path / 'agys'} in the editor, or "
                f"start agy in {tmp_path / 'editors'} (in a terminal there, or with agy-harness acp "
                "--start-agy when no agy runs)."
            )
            assert len(agy.cascade_ids()) == before  # nothing was started in agy
            # its own workspace is served, and listed under it
            sid = (await conn.new_session(cwd=str(tmp_path / "agys"), mcp_servers=[])).session_id
            assert sid in {
                s.session_id for s in (await conn.list_sessions(cwd=str(tmp_path / "agys"))).sessions
            }


async def test_load_and_resume_apply_session_news_rule_to_their_cwd(tmp_path: Path) -> None:
    """``session/load`` and ``session/resume`` honour ``cwd`` as ``session/new`` does: another
    directory is ``-32004`` naming both paths, a relative one ``-32602``; a refusal leaves the open
    session open, and agy's own directory (or a symlink to it) is served."""
    agys, editors = tmp_path / "agys", tmp_path / "editors"
    link = tmp_path / "link"
    link.symlink_to(agys, target_is_directory=True)
    async with Simulator(pace=0.05, workspace=str(agys)) as agy:
        await agy.submit_user_turn("Say hello in one short sentence.")
        await agy.wait_idle(timeout=30)
        sid = agy.cascade_id
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(agy.port)), env=_state(tmp_path)) as conn:
            await conn.load_session(cwd=str(agys), session_id=sid, mcp_servers=[])
            for method in (conn.load_session, conn.resume_session):
                with pytest.raises(RequestError) as err:
                    await method(cwd=str(editors), session_id=sid, mcp_servers=[])
                assert err.value.code == -32004 and err.value.data == {
                    "reason": "other_workspace",
                    "cwd": str(editors),
                    "workspace": str(agys),
                }
                assert str(err.value).startswith(f"The agy running here works in {agys}, not in {editors}")
                with pytest.raises(RequestError) as err:
                    await method(cwd="agys", session_id=sid, mcp_servers=[])
                assert err.value.code == -32602 and "absolute" in str(err.value.data)
            # the refusals closed nothing: the loaded session still takes a prompt
            assert (await prompt(conn, sid, "Say hello in one short sentence.")).stop_reason == "end_turn"
            await conn.resume_session(cwd=str(link), session_id=sid, mcp_servers=[])


async def test_the_sessions_made_list_under_the_editors_path_after_a_restart(tmp_path: Path) -> None:
    """The editor's path (here a symlink to agy's workspace) is remembered per session in the private
    state dir: a new agent process (an editor restart) lists the session under it."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    async with Simulator(pace=0.05, workspace=str(real)) as agy:
        await agy.submit_user_turn("Say hello in one short sentence.")
        await agy.wait_idle(timeout=30)
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(agy.port)), env=_state(tmp_path)) as conn:
            sid = (await conn.new_session(cwd=str(link), mcp_servers=[])).session_id
        client = RecordingClient()
        async with acp_agent(client, where=("--port", str(agy.port)), env=_state(tmp_path)) as conn:
            listed = (await conn.list_sessions(cwd=str(link))).sessions
            assert [s.session_id for s in listed] == [sid] and listed[0].cwd == str(link)
            other = {s.session_id for s in (await conn.list_sessions(cwd=str(real))).sessions}
            assert sid not in other and other  # agy's own conversation lists under agy's path
        state = tmp_path / "state" / "acp"
        assert (state.stat().st_mode & 0o777, (state / "acp-session-cwds.json").stat().st_mode & 0o777) == (
            0o700,
            0o600,
        )
