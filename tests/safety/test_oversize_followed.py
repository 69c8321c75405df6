"""Issue #35 case 3, a neighbour: a conversation of 1,250 finished steps of ~3 KB each is over the
poll's body limit as a whole, while no string in it is long enough for a harder cut to help. The
poll said once that it "cannot be read by polling" and stopped there: with the stream down, a later
approval (`run ls -la`) never reached the human.

Now the poll follows the conversation from the first step offset whose read fits
(``stepOffset``), says once which earlier steps it could not read (never showing them as read), and
the next approval arrives and runs. On the simulator with the stream down and the body limit lowered
to 3 MiB (the real limit is 64 MiB: the same arithmetic with more steps), through the public API."""

from __future__ import annotations

import asyncio
import re

import pytest

from agy_harness.adapters.rpc import client as client_module
from agy_harness.adapters.rpc import sources as sources_module
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates
from agy_harness.ports.events import Notice
from tests.binding.helpers import waiting, watched
from tests.rpc.helpers import polled
from tests.safety.test_oversize_conversation import SLOW_POLL, ended, next_gate, stream_down

#: a quarter of the 5,000 steps over 12 MiB this test had: the same shape (about a third of the list
#: unreadable, every string under the hardest cut) at a quarter of the bytes every read moves (each
#: probe of the doubling and the bisection is a whole read of the simulator's list)
LIMIT = 3 << 20
STEPS = 1250
SIZE = 3000  # bytes of each message: under the hardest string cut (4 KiB), 4.6 MB of JSON in all


async def test_a_conversation_of_many_steps_over_the_limit_is_followed_and_the_next_approval_arrives(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "MAX_BODY", LIMIT)
    for i in range(STEPS):
        await sim.send_agent_message(sim.cascade_id, f"{i} " + "m" * SIZE)
    stream_down(sim)
    async with watched(sim, stream_idle_timeout=0.5, options=SLOW_POLL) as w:
        mark = len(w.events)
        await w.session.send("run `ls -la`")
        real = await next_gate(w, mark, "ls -la")  # the approval reaches the human
        assert waiting(sim, real.step_index)
        await w.session.answer(real.gate_id, True)
        await ended(w, w.events.index(real))
        unread = [e for e in w.events if isinstance(e, Notice) and "cannot be read by polling" in e.text]
        assert len(unread) == 1 and unread[0].level == "error"  # said once
        said = re.match(r"steps 0 to (\d+) of this conversation", unread[0].text)
        assert said is not None, unread[0].text
        last_unread = int(said.group(1))
        assert 0 < last_unread < STEPS - 1
        assert f"followed from step {last_unread + 1} on" in unread[0].text
        assert w.events.index(unread[0]) < w.events.index(real)  # said before what follows it
    assert [command for command, _ in sim.executed] == ["ls -la"]


async def test_the_poll_goes_past_steps_it_cannot_read_and_never_shows_them_as_read(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mid-conversation: 1,250 steps arrive between two polls. The poll names the steps it could not
    read, and what it delivers from there on is exactly agy's steps from that index (the same content
    and step index as the whole list holds them); the list from there, re-read whole every
    ``FULL_EVERY`` polls, fits and names nothing again."""
    monkeypatch.setattr(sources_module, "FULL_EVERY", 3)
    async with RpcClient(sim.base_url) as client:
        client.max_body = LIMIT
        async with polled(client, sim.cascade_id, within=120) as (source, batches):
            assert batches[0].unread is None
            first = len(sim.steps())
            for i in range(STEPS):  # (no await that yields: no poll in between)
                await sim.send_agent_message(sim.cascade_id, f"{i} " + "m" * SIZE)
            async with asyncio.timeout(120):
                while not any(b.unread for b in batches):
                    await asyncio.sleep(0.01)
            [gap] = [b for b in batches if b.unread]
            assert gap.unread is not None
            start, end = gap.unread
            assert start == first  # the steps before were read: never named as unread
            assert first < end < first + STEPS  # not the whole conversation given up
            assert list(gap.steps) == sim.steps()[end:]  # agy's steps from there, exactly
            [index] = flood_gates(sim, 1)  # a new step arrives after them
            polls = source.polls
            async with asyncio.timeout(120):
                while len(batches[-1].steps) <= index - end or source.polls < polls + 2 * 3:
                    await asyncio.sleep(0.01)
            assert list(batches[-1].steps) == sim.steps()[end:]
            assert [b for b in batches if b.unread] == [gap]  # named once
