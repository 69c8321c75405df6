"""Issue #35 case 3: a 4.5 MiB command that agy repeats in several fields (command line, proposed
command line, the permission's target, the call's arguments, the prompt) made
``GetCascadeTrajectorySteps`` exceed the body limit even with every string cut at 4 MiB; the harness
refused it on every poll, so with the stream dropped the next approval never reached anyone.

Now the poll reads it again with its strings cut harder until it fits, and a conversation that still
cannot be read is said once, as a notice. On the simulator with the stream down (every
``StreamAgentStateUpdates`` answers 503) and the body limit lowered to 12 MiB (what several 4 MiB
cuts exceed; the real limit is 64 MiB, the same arithmetic with more fields), through the public API."""

from __future__ import annotations

import asyncio

import pytest

from agy_harness.adapters.rpc import client as client_module
from agy_harness.adapters.rpc import sources as sources_module
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.service.conversation import HarnessOptions
from agy_harness.ports.events import Event, GateOpened, Notice, StatusChanged
from tests.binding.helpers import FAST, Watched, waiting, watched

BIG = "x" * (9 << 19)  # 4.5 MiB
LIMIT = 12 << 20
#: the poll is given time to read a 25 MB answer between the stream's retries (a few seconds on a
#: busy machine, the simulator copying its steps included)
SLOW_POLL = HarnessOptions(**{**vars(FAST), "fallback_backoff": 15.0, "max_backoff": 15.0})
LONG = 180.0


async def ended(w: Watched, after: int) -> None:
    def idle(e: Event) -> bool:
        return isinstance(e, StatusChanged) and e.status == "idle" and w.events.index(e) >= after

    await w.until(idle, "the turn to end", timeout=LONG)


async def next_gate(w: Watched, after: int, command: str = "") -> GateOpened:
    def match(e: Event) -> bool:
        if not isinstance(e, GateOpened) or w.events.index(e) < after:
            return False
        return not command or (e.permission is not None and e.permission.command_line == command)

    found = await w.until(match, f"a gate for {command or 'the huge command'}", timeout=LONG)
    assert isinstance(found, GateOpened)
    return found


def stream_down(sim: Simulator) -> None:
    sim.faults.fail("StreamAgentStateUpdates", status=503, times=1 << 30)


async def test_an_answer_over_the_limit_even_cut_is_read_cut_harder_and_the_next_approval_arrives(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "MAX_BODY", LIMIT)
    stream_down(sim)
    async with watched(sim, stream_idle_timeout=0.5, options=SLOW_POLL) as w:
        await w.session.send(f"run `echo {BIG}`")
        huge = await next_gate(w, 0)  # read by the poll, its strings cut harder
        assert huge.permission is not None and huge.permission.command_line.startswith("echo xxx")
        await w.session.answer(huge.gate_id, False)  # (a cut request can only be denied)
        await ended(w, w.events.index(huge))
        mark = len(w.events)
        await w.session.send("run `ls -la`")
        real = await next_gate(w, mark, "ls -la")  # the next approval reaches the human
        assert waiting(sim, real.step_index)
        await w.session.answer(real.gate_id, True)
        await ended(w, w.events.index(real))
        assert not w.notices("error")
    assert [command for command, _ in sim.executed] == ["ls -la"]


async def test_a_conversation_that_cannot_be_read_is_said_once(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "MAX_BODY", LIMIT)
    monkeypatch.setattr(sources_module, "HARDER_CUTS", ())  # no harder cut to try: truly unreadable
    stream_down(sim)
    async with watched(sim, stream_idle_timeout=0.5, options=SLOW_POLL) as w:
        await w.session.send(f"run `echo {BIG}`")
        found = await w.until(
            lambda e: isinstance(e, Notice) and "cannot be read by polling" in e.text,
            "the notice",
            timeout=LONG,
        )
        assert isinstance(found, Notice) and found.level == "error"
        said = found.text
        polls = sim.calls.count("GetCascadeTrajectorySteps")
        async with asyncio.timeout(LONG):
            while sim.calls.count("GetCascadeTrajectorySteps") < polls + 3:  # it keeps trying...
                await asyncio.sleep(0.05)
        unreadable = [e for e in w.events if isinstance(e, Notice) and "cannot be read" in e.text]
        # ...each unreadable range said once: a poll on a busy machine can see the conversation grow past
        # the limit in two parts (steps 0-0, then 2-3: two notices, each once; failed as "one notice")
        texts = [e.text for e in unreadable]
        assert said in texts and len(texts) == len(set(texts))
        assert all("cannot be read by polling" in t for t in texts)
