"""A flood of bogus gates in the terminal (``attach``'s sink; issue #35, case 8): 20 WAITING approvals
agy refuses any answer to, then a real request, a human answering ``y`` to every prompt. The terminal
asks one gate at a time, newest first: the real request is prompted for, and runs; each bogus prompt
answered is refused once, says "set aside" once, and is never prompted for again."""

from __future__ import annotations

import asyncio
import io
import os
import re
import threading
from collections.abc import Sequence

from rich.console import Console

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Event, GateOpened
from tests.binding.helpers import FAST

POISON = 20


def _aside(screen: Console) -> list[str]:
    """The steps whose answer agy refused, as each "set aside" notice on the screen names them."""
    out = screen.export_text(clear=False)
    return re.findall(r"input not registered for step (\d+)\) while it still waits; set aside", out)


async def test_the_real_request_is_prompted_and_each_bogus_one_set_aside_once(sim: Simulator) -> None:
    screen = Console(record=True, width=200, color_system=None, force_terminal=False, file=io.StringIO())
    sink = TerminalSink(screen, input_fn=lambda _prompt: "y", status_line=False)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        await s.send("say hello")
        await sim.wait_idle(timeout=30)
        flood_gates(sim, POISON)
        await s.send("run `touch real`")
        async with asyncio.timeout(60):
            while ("touch real", sim.workspace) not in sim.executed:
                await asyncio.sleep(0.05)
            while len(set(_aside(screen))) < POISON:  # the human goes on answering each bogus prompt
                await asyncio.sleep(0.05)
    out = screen.export_text(clear=False)
    prompts = [
        (m.start(), m.group(1)) for m in re.finditer(r"\$ (echo bogus-\d+|touch real) #\w+ · allow\?", out)
    ]
    asked = [what for _, what in prompts]
    assert "touch real" in asked
    assert asked.index("touch real") <= POISON + 2, asked
    steps = [int(i) for i in _aside(screen)]
    assert len(steps) == len(set(steps)) == POISON  # one "set aside" notice per bogus gate, no repeat
    assert out.count("set aside") == POISON
    told = {f"echo bogus-{step - min(steps)}": out.index(f"for step {step}) while") for step in steps}
    for at, what in prompts:  # a bogus gate is never prompted for after it was set aside
        assert what == "touch real" or at < told[what], (what, asked)


async def test_gates_appended_after_the_real_prompt_never_take_its_place(sim: Simulator) -> None:
    """The terminal shows one prompt: the real request's, which the human is reading when agy's step
    list grows 20 bogus approvals of no running turn after it. The prompt stays; the human's ``y`` goes
    to the real request (the first answer agy receives is for its step), which runs; the bogus prompts
    come after. Before: each newer bogus gate took the prompt's place ("newest first"), the human's
    ``y`` went to bogus-19 (the first answer agy received), and the real prompt came back last."""
    screen = Console(record=True, width=200, color_system=None, force_terminal=False, file=io.StringIO())
    reading = threading.Event()
    go = threading.Event()

    def human(_prompt: str) -> str:
        if not reading.is_set():  # the first prompt: read slowly, until the flood is in
            reading.set()
            go.wait(30)
        return "y"

    opened: list[int] = []  # the step of every gate the terminal was given

    class Seeing(TerminalSink):
        async def deliver(self, events: Sequence[Event]) -> int:
            taken = await super().deliver(events)
            opened.extend(e.step_index for e in events[:taken] if isinstance(e, GateOpened))
            return taken

    sink = Seeing(screen, input_fn=human, status_line=False)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        await s.send("say hello")
        await sim.wait_idle(timeout=30)
        await s.send("run `touch real`")
        async with asyncio.timeout(30):
            while not reading.is_set():
                await asyncio.sleep(0.02)
        real = next(
            i for i, step in enumerate(sim._cascade(None).steps) if step.get("status", "").endswith("WAITING")
        )
        bogus = flood_gates(sim, POISON)
        async with asyncio.timeout(30):  # the terminal was given the whole flood
            while not set(bogus) <= set(opened):
                await asyncio.sleep(0.02)
        go.set()
        async with asyncio.timeout(60):
            while ("touch real", sim.workspace) not in sim.executed:
                await asyncio.sleep(0.05)
    assert min(bogus) > real
    assert sim.received[0][1]["stepIndex"] == real  # the human's answer reached the request they read
    out = screen.export_text(clear=False)
    prompts = re.findall(r"\$ (echo bogus-\d+|touch real) #\w+ · allow\?", out)
    assert prompts[0] == "touch real" and prompts.count("touch real") == 1, prompts
