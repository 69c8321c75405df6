"""Through the real omnigent server: ``omnigent run <agent dir> --server URL -p ...`` with an agent spec
that says ``harness: agy-harness`` (the README's command), against the simulator. omnigent's server,
host daemon, runner and harness process are all omnigent's own; the server runs from the environment
the plugin is installed in (it must know the harness id to accept the spec)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING
from tests.real_omnigent import server_env

from .conftest import agent_dir, new_session, run_omnigent, session_ids, without_bwrap


@pytest.mark.parametrize("os_env", [False, True], ids=["as-printed", "os_env-unsandboxed"])
async def test_omnigent_run_with_the_readme_agent_reaches_agy(
    plugin_python: Path, server_own_host: tuple[str, Path], tmp_path: Path, os_env: bool
) -> None:
    """The README's spec as printed, and with its commented ``os_env`` line taken in, on a PATH with no
    ``bwrap`` (bubblewrap): the turn reaches agy and its reply comes back. A host daemon not
    ``plugin_host``'s: the daemon ``omnigent run`` starts, and the runner it spawns, see that PATH (the
    shared one has the PATH of whichever test started it); this test's two cases share it
    (``own_host``: both give it that PATH), each with a session, simulator and agent of its own."""
    url, home = server_own_host
    env = without_bwrap(server_env(home))
    assert shutil.which("bwrap", path=env["PATH"]) is None
    async with Simulator(profile="1.0.10", pace=0.05) as sim:
        agent = agent_dir(tmp_path, sim, os_env=os_env)
        code, out = await run_omnigent(
            plugin_python,
            "run",
            str(agent),
            "--server",
            url,
            "-p",
            "Say hello in one short sentence.",
            home=home,
            env=env,
        )
        assert code == 0, out[-3000:]
        assert GREETING in out
        planner = [s for s in sim.steps() if s["type"].endswith("PLANNER_RESPONSE")][-1]
        [user] = [s for s in sim.steps() if s["type"].endswith("USER_INPUT")]
    assert (
        user["userInput"]["userConfig"]["plannerConfig"]["planModel"] == "MODEL_PLACEHOLDER_M71"
    )  # Gemini 3 Flash
    match = re.search(r"/c/([0-9a-f]+)", out)
    assert match, out
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        session: dict[str, Any] = (await http.get(f"/v1/sessions/{match.group(1)}")).json()
    assert session["harness"] == "agy-harness"
    texts = [
        (i["data"]["role"], i["data"]["content"][0]["text"])
        for i in session["items"]
        if i["type"] == "message"
    ]
    assert texts == [("user", "Say hello in one short sentence."), ("assistant", GREETING)]
    # usage and model as omnigent stores them: input includes agy's cache reads, the model's display name
    spent = planner["metadata"]["modelUsage"]
    cache = int(spent.get("cacheReadTokens", 0))
    usage = session["usage_by_model"]["Gemini 3 Flash"]
    assert usage["input_tokens"] == int(spent["inputTokens"]) + cache
    assert usage["cache_read_input_tokens"] == cache
    assert usage["output_tokens"] == int(spent["outputTokens"])


async def session_items(http: httpx.AsyncClient, sid: str) -> list[tuple[str, str]]:
    session = (await http.get(f"/v1/sessions/{sid}")).json()
    out = []
    for item in session["items"]:
        if item["type"] == "message":
            out.append((item["data"]["role"], item["data"]["content"][0]["text"]))
    return out


async def test_a_turn_typed_in_agy_is_mirrored_into_the_session(
    plugin_python: Path, server: tuple[str, Path], tmp_path: Path
) -> None:
    url, home = server
    async with (
        Simulator(profile="1.0.10", pace=0.05) as sim,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        agent = agent_dir(tmp_path, sim)
        known = await session_ids(http)  # the server is shared: this test's session is the new one
        proc = await asyncio.create_subprocess_exec(  # the REPL stays open (its stdin stays open)
            str(plugin_python),
            "-m",
            "omnigent",
            "run",
            str(agent),
            "--server",
            url,
            "-p",
            "Say hello in one short sentence.",
            cwd=str(home),
            env=server_env(home),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            async with asyncio.timeout(180):
                sid = await new_session(http, known)
                while (await session_items(http, sid))[-1:] != [("assistant", GREETING)]:
                    await asyncio.sleep(0.2)
                # typed in agy's own terminal, outside any omnigent turn
                await sim.submit_user_turn("hello from the terminal")
                await sim.wait_idle(timeout=30)
                while len(await session_items(http, sid)) < 4:
                    await asyncio.sleep(0.2)
            items = await session_items(http, sid)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.communicate(), 60)
    assert items == [
        ("user", "Say hello in one short sentence."),
        ("assistant", GREETING),
        ("user", "hello from the terminal"),
        ("assistant", GREETING),
    ]


async def test_with_p_omnigent_refuses_the_approval_and_the_command_does_not_run(
    plugin_python: Path, server: tuple[str, Path], tmp_path: Path
) -> None:
    """The README's word on ``-p``: omnigent answers every approval itself, with a refusal."""
    url, home = server
    async with Simulator(profile="1.0.10", pace=0.05, gate_timeout=None) as sim:
        agent = agent_dir(tmp_path, sim)
        code, out = await run_omnigent(
            plugin_python, "run", str(agent), "--server", url, "-p", "run: git status", home=home
        )
        assert code == 0, out[-3000:]
        [command] = [s for s in sim.steps() if s["type"].endswith("RUN_COMMAND")]
    assert command["status"] != "CORTEX_STEP_STATUS_DONE"
    assert command["completedInteractions"][-1]["response"]["permission"].get("allow", False) is False
