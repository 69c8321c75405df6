"""``agy-harness sim`` works where it is started, as agy does (issue 47): its workspace is the directory
it was started in, so ``agy-harness acp --port N`` from the editor's project (the same directory) is
served, and its ``pwd`` prints that directory. Before, it reported a recorded
``/home/agy/.gemini/antigravity-cli/scratch`` and ``session/new`` was refused with -32004 naming a
directory that does not exist here."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from .helpers import RecordingClient, acp_agent, agy_harness_command, prompt


@asynccontextmanager
async def sim_in(directory: Path, *args: str) -> AsyncIterator[int]:
    """``agy-harness sim`` started in ``directory`` (a subprocess, its own cwd); yields its port."""
    process = await asyncio.create_subprocess_exec(
        *agy_harness_command(), "sim", *args,
        cwd=directory, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        port = 0
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
            assert line, "agy-harness sim ended before it said its port"
            if line.startswith("port "):
                port = int(line.split()[1])
            if line.startswith("cascade "):
                break
        yield port
    finally:
        process.terminate()
        await process.wait()


async def _allow(tool_call: Any, options: list[Any]) -> str:
    return "allow"


async def test_sim_reports_the_directory_it_was_started_in_as_its_workspace(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "AGY_HARNESS_STATE_DIR": str(tmp_path / "state")}
    async with sim_in(project, "--pace", "0") as port:
        client = RecordingClient(permission=_allow)
        async with acp_agent(client, where=("--port", str(port)), env=env) as conn:
            sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id  # not -32004
            assert (await prompt(conn, sid, "run: pwd")).stop_reason == "end_turn"
            done = [u for u in client.of(sid, "tool_call_update") if u.status == "completed"]
            assert done[-1].content[0].content.text == f"```\n{project}\n```"
            listed = (await conn.list_sessions(cwd=str(project))).sessions
            assert sid in {s.session_id for s in listed}
