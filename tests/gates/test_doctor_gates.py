"""doctor's gate lines: which route this agy takes for a lasting grant, which kinds are answerable,
which settings raise gates the harness only names."""

from __future__ import annotations

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.entrypoints.doctor.probe import diagnose, render
from agy_harness.core.kinds import KINDS

from .helpers import CONVERSATION, answer_waiting


async def test_doctor_says_the_scope_route_and_the_kinds_and_settings() -> None:
    async with Simulator(pace=0.0) as sim:
        await sim.submit_user_turn("run: pwd")
        await sim.wait_idle(timeout=10)
        async with RpcClient(sim.base_url) as client:
            before = await diagnose(client, sim.cascade_id, "agy 1.0.10")
            await answer_waiting(sim, client, CONVERSATION)
            after = await diagnose(client, sim.cascade_id, "agy 1.0.10")
    assert "not yet seen recorded" in before["gates"]["scope_route"]
    assert "recorded PERMISSION_SCOPE_CONVERSATION" in after["gates"]["scope_route"]
    text = render(before)
    assert "scopes: RPC permission.scope" in text and "agy's own menu keys (attach --tmux" in text
    recorded = [
        line for line in text.splitlines() if line.startswith("gate kinds answered here as agy recorded")
    ]
    assert recorded == ["gate kinds answered here as agy recorded them: allow a tool; answer a question"]
    described = next(line for line in text.splitlines() if "from the IDE's descriptors" in line)
    assert (
        "open a page in a browser" in described and "deploy" in described and "use an MCP tool" in described
    )
    assert not any(k.field in described for k in KINDS if len(k.field) > 6)  # in words, not field names
    assert not any(line.startswith("gate kinds shown as named cards") for line in text.splitlines())
    assert before["gates"]["evidence"]["deploy"] == "descriptors"
    assert "setting artifactReviewPolicy:" in text and "setting allowNonWorkspaceAccess:" in text


async def test_doctor_says_agy_did_not_keep_only_a_grant_it_asked_again_for() -> None:
    """A request the grant does not cover (``pwd`` after ``ls`` was allowed for the conversation) is
    asked as always: agy kept the grant so far. ``ls src`` asked again: agy did not keep it."""
    async with Simulator(pace=0.0) as sim, RpcClient(sim.base_url) as client:
        sim.faults.forget_grants = True
        await sim.submit_user_turn("run: ls -la")
        granted = await answer_waiting(sim, client, CONVERSATION)
        await sim.submit_user_turn("run: pwd")
        await answer_waiting(sim, client, {"allow": True})
        kept = await diagnose(client, sim.cascade_id, None)
        await sim.submit_user_turn("run: ls src")
        again = await answer_waiting(sim, client, {"allow": True})
        forgotten = await diagnose(client, sim.cascade_id, None)
    assert kept["gates"]["grants_not_kept"] == []
    assert kept["gates"]["scope_route"].startswith(
        "RPC permission.scope: this agy recorded PERMISSION_SCOPE_CONVERSATION"
    )
    said = f"agy did not keep the grant (conversation) for commands that start with 'ls' (given at step {granted}, asked again at step {again})"
    assert forgotten["gates"]["grants_not_kept"] == [said]
    assert forgotten["gates"]["scope_route"].startswith(
        "agy's own menu keys (attach --tmux, GateAnswer.persist), the fallback: " + said
    )
    assert f"scopes: {forgotten['gates']['scope_route']}" in render(forgotten).splitlines()
