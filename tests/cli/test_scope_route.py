"""Issue 34: ``agy-harness record`` says which route this agy honours for a lasting grant, in the words
``agy-harness doctor`` says it for the same agy; where agy asked again for a request the grant covered
(the simulator's ``forget_grants``), both say agy did not keep the grant."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from tests.gates.helpers import CONVERSATION, answer_waiting

from .conftest import Pane, Terminal, cli


def _after(screen: str, prefix: str) -> str:
    """The line that starts with ``prefix``, its wrapped rest joined (the CLI fits lines to the
    terminal: a continuation is indented under it)."""
    rows = screen.splitlines()
    [at] = [i for i, row in enumerate(rows) if row.startswith(prefix)]
    parts = [rows[at]]
    for row in rows[at + 1 :]:
        if not row.startswith("    ") or not row.strip():
            break
        parts.append(row.strip())
    return " ".join(parts).removeprefix(prefix)


async def _exit(pane: Pane, timeout: float = 90.0) -> int:
    return await asyncio.to_thread(pane.wait_exit, timeout)


@pytest.mark.parametrize(
    ("forget", "redact"), [(False, False), (True, False), (True, True)], ids=["kept", "forgotten", "redacted"]
)
async def test_record_says_the_scope_route_doctor_says(
    terminal: Terminal, tmp_path: Path, forget: bool, redact: bool
) -> None:
    """``--redact``: the same line, the grant's pattern (agy's, from the command) redacted as in the file."""
    out = tmp_path / "session.jsonl"
    async with Simulator(pace=0.0) as sim, RpcClient(sim.base_url) as client:
        sim.faults.forget_grants = forget
        where = ("--port", str(sim.port))  # its one conversation
        recording = terminal.run(cli("record", *where, "--out", str(out), *(["--redact"] if redact else [])))
        await asyncio.to_thread(recording.wait, "until Ctrl-C")
        await sim.submit_user_turn("run: ls -la")
        granted = await answer_waiting(sim, client, CONVERSATION)  # a human allows `ls` for this conversation
        await sim.submit_user_turn("run: ls src")  # covered by that grant
        asked_again = await answer_waiting(sim, client, {"allow": True}) if forget else None
        await sim.wait_idle(timeout=60)
        await asyncio.to_thread(recording.wait, lambda _s: out.read_text().count("\n") > 1)  # a frame
        recording.key("C-c")
        assert await _exit(recording) == 130
        received = [i["permission"] for _, i in sim.received]  # (before doctor probes the method)
        doctor = terminal.run(cli("doctor", *where))
        assert await _exit(doctor) == 0
        doctor_json = terminal.run(cli("doctor", "--json", *where) + f" > {tmp_path / 'doctor.json'}")
        assert await _exit(doctor_json) == 0
    recorded = _after(recording.screen(), "agy-harness record: scopes: ")
    if redact:
        assert "'ls'" not in recorded and "ls -la" not in out.read_text()
        recorded = recorded.replace("'<redacted 2 chars>'", "'ls'")
    assert recorded == _after(doctor.screen(), "scopes: ")  # the same words for the same agy
    report = json.loads((tmp_path / "doctor.json").read_text())
    assert report["gates"]["scope_route"] == recorded
    if forget:
        assert received == [CONVERSATION, {"allow": True}]  # agy asked again for `ls src`
        said = (
            "agy did not keep the grant (conversation) for commands that start with 'ls' "
            f"(given at step {granted}, asked again at step {asked_again})"
        )
        assert recorded.startswith("agy's own menu keys (attach --tmux, GateAnswer.persist), the fallback: " + said)
        assert report["gates"]["grants_not_kept"] == [said]
    else:
        assert received == [CONVERSATION]  # agy kept it: `ls src` ran without asking
        assert recorded == (
            "RPC permission.scope: this agy recorded PERMISSION_SCOPE_CONVERSATION in this conversation's answers"
        )
        assert report["gates"]["grants_not_kept"] == []
        assert re.search(r"did not keep", recording.screen()) is None
