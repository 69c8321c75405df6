"""The editor set-up of docs/acp.md, taken at its word: each JSON snippet of the page parses, names
an absolute command, and that command line (the path replaced by this checkout's script, ``--sim``
added) starts an agent the SDK's client initializes and opens a session on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities, Implementation

from .helpers import RecordingClient, agy_harness_command

PAGE = Path(__file__).resolve().parents[2] / "docs" / "acp.md"


def _snippets() -> list[dict[str, Any]]:
    text = PAGE.read_text()
    section = text[text.index("# agy in an editor") : text.index("## What maps to what")]
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S)]


def test_the_snippets_name_an_absolute_path_and_the_install_line_works_from_a_clone() -> None:
    text = PAGE.read_text()
    section = text[text.index("# agy in an editor") : text.index("## What maps to what")]
    assert "pip install -e '.[acp]'" in section and "agy-harness[acp]" not in section
    servers = [s["agent_servers"]["agy"] for s in _snippets()]
    assert len(servers) == 2  # Zed, JetBrains
    assert all(s["command"].startswith("/") and s["args"] == ["acp"] for s in servers)
    lua = re.findall(r"```lua\n(.*?)```", section, re.S)
    assert len(lua) == 2 and all('"/home/you/agy-harness/.venv/bin/agy-harness"' in b for b in lua)


@pytest.mark.parametrize("index", [0, 1])
async def test_the_documented_command_line_serves_an_editor(index: int, tmp_path: Path) -> None:
    server = _snippets()[index]["agent_servers"]["agy"]
    command = [*agy_harness_command(), *server["args"], "--sim", "--sim-pace", "0"]
    client = RecordingClient()
    # (the SDK's 2 s wait for the agent's clean stop after stdin's EOF raced its exit on a loaded
    # machine: ProcessLookupError in teardown; tests/acp_agent/helpers.py waits as long)
    async with spawn_agent_process(
        client,
        command[0],
        *command[1:],
        env=server.get("env") or None,
        transport_kwargs={"shutdown_timeout": 30.0},
    ) as (conn, _process):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="pytest", version="0"),
        )
        assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
