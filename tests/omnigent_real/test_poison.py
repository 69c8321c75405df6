"""A poison sub-agent and re-delivered sub-agent starts, against the REAL omnigent 0.19.1 server
(issue 35 point 7).

A fault-injecting proxy (an httpx transport in front of the real server, the sink's only way to it)
answers every ``external_antigravity_subagent_start`` with a persistent 503 while omnigent takes
every other body. The registration gets a bounded retry, is set aside with a notice, the sub-agent
is not read, and the parent's later permission reaches the human. Re-delivering committed events
(a restart) keeps omnigent's one child per sub-agent.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.sinks.omnigent import OmnigentSink
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import SubagentStarted
from tests.real_omnigent import create_session

from .helpers import BOUNDED, FAST, WAIT, FaultProxy, Omnigent, Tee, accept_and_run, proxied, until

pytestmark = pytest.mark.asyncio(loop_scope="module")


class PoisonProxy(FaultProxy):
    """In front of the real server: a sub-agent registration gets 503, everything else goes through."""

    def __init__(self) -> None:
        super().__init__()
        self.poisoned = 0

    async def fault(self, request: httpx.Request) -> httpx.Response | None:
        if request.method == "POST" and request.url.path.endswith("/events"):
            body = await request.aread()
            if b"external_antigravity_subagent_start" in body:
                self.poisoned += 1
                return httpx.Response(503, json={"error": "injected"}, request=request)
        return None


async def test_a_poison_subagent_is_set_aside_and_the_parents_permission_is_shown(omni: Omnigent) -> None:
    proxy = PoisonProxy()
    async with proxied(omni, proxy, poison_after=2) as p:
        sid, sim, tee, session = p.sid, p.sim, p.tee, p.session
        await session.send("start a subagent to review the code")

        async def set_aside() -> bool:
            return any(
                i.get("code") == "agy_harness_notice"
                and "/subagent/" in i.get("message", "")
                and "refused" in i.get("message", "")
                for i in await omni.items(sid)
            )

        await until(set_aside)  # the notice, in the parent session
        await session.send("run: git status")  # the parent goes on: its permission is shown
        await accept_and_run(omni, sid, sim, "git status")
        poisoned = proxy.poisoned
        await asyncio.sleep(1.0)  # bounded: nothing asks omnigent again for the set-aside child
        assert proxy.poisoned == poisoned
        children = [c for c in sim.cascade_ids() if c != sim.cascade_id]
        assert children and not any(e.cascade_id in children for e in tee.accepted)  # never read
        refusals = [
            i["message"]
            for i in await omni.items(sid)
            if i.get("code") == "agy_harness_notice" and "refused" in i.get("message", "")
        ]
        assert len(refusals) == 1 and children[0] in refusals[0]  # one notice, none per child event
        assert await omni.children(sid) == []
    # bounded: two deliveries of at most a 0.5 s retry each (a handful of tries), never forever
    assert 2 <= poisoned <= 40, poisoned


async def test_re_delivered_committed_events_keep_one_child(omni: Omnigent) -> None:
    sid = await asyncio.to_thread(create_session, omni.base_url)
    async with Simulator(profile="1.0.10", gate_timeout=None, pace=0.02) as sim:
        async with OmnigentSink(omni.base_url, sid, retry=BOUNDED) as sink:
            tee = Tee(sink)
            async with open_session(
                port=sim.port, cascade_id=sim.cascade_id, sink=tee, options=FAST
            ) as session:
                await session.send("start a subagent to review the code")
                children: list[str] = []

                async def child_idle() -> bool:
                    children[:] = [c for c in sim.cascade_ids() if c != sim.cascade_id]
                    return bool(children) and any(
                        e.type == "status" and getattr(e, "status", "") == "idle" and e.cascade_id in children
                        for e in tee.accepted
                    )

                await until(child_idle)
        (first,) = await omni.children(sid)
        child_events = [e for e in tee.accepted if e.cascade_id in children]
        start = next(e for e in tee.accepted if isinstance(e, SubagentStarted))
        # a restart: a new sink gets the child's committed events again, its start already committed
        async with OmnigentSink(omni.base_url, sid, retry=BOUNDED, cascade_id=sim.cascade_id) as again:
            assert await again.deliver(child_events) == len(child_events)
            assert await again.deliver([start]) == 1  # and the start itself, re-delivered
            assert again.child_session(start.child_cascade_id) == first["id"]
        rows = await omni.children(sid)
        assert [r["id"] for r in rows] == [first["id"]], json.dumps(rows)[:500]


class BodyProxy(FaultProxy):
    """In front of the real server: an events POST holding a user message that says ``marker`` gets
    503; the rest goes through. Only the user's message: the simulator's thinking quotes it ("The user
    wrote: ..."), and a poll that sees the whole thinking at once (a busy machine) would otherwise
    poison that reasoning delta too."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.poisoned = 0

    def _poisons(self, raw: bytes) -> bool:
        sent = json.loads(raw)
        bodies = sent if isinstance(sent, list) else [sent]
        said = [json.dumps(b) for b in bodies]
        return any('"role": "user"' in text and self.marker in text for text in said)  # a user message

    async def fault(self, request: httpx.Request) -> httpx.Response | None:
        events = request.method == "POST" and request.url.path.endswith("/events")
        if events and self._poisons(await request.aread()):
            self.poisoned += 1
            return httpx.Response(503, json={"error": "injected"}, request=request)
        return None


async def test_a_poison_message_is_set_aside_and_a_later_permission_is_shown(omni: Omnigent) -> None:
    """Not only a sub-agent start: the user's message of the conversation's first turn gets a
    persistent 503 while omnigent takes every other body. It is set aside after a bounded retry, with
    one notice, and the next turn's permission reaches the human. Before: the message was retried
    in order forever, and everything behind it froze (the permission card never came)."""
    proxy = BodyProxy("poison-me")
    async with proxied(omni, proxy, poison_after=2) as p:
        sid, sim, session = p.sid, p.sim, p.session
        await session.send("Say hello to poison-me in one short sentence.")
        await sim.wait_idle(timeout=WAIT)

        async def refusals() -> list[str]:
            return [
                i["message"]
                for i in await omni.items(sid)
                if i.get("code") == "agy_harness_notice" and "refused" in i.get("message", "")
            ]

        async def told() -> bool:
            return bool(await refusals())

        await until(told)
        await session.send("run: git status")
        await accept_and_run(omni, sid, sim, "git status")
        assert len(await refusals()) == 1  # one notice: the user message, once
    assert 3 <= proxy.poisoned <= 60, proxy.poisoned  # bounded: three deliveries of a 0.5 s retry
