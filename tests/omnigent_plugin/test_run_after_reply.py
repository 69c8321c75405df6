"""agy may work on after its final reply -- on a conversation's first turn it writes a checkpoint (the
title, a model call of its own) after the reply (recorded: ``checkpoint.json``) -- and omnigent's turn
is over only once agy's run is: through omnigent's own harness runner, the simulator held after its
reply until the test lets it finish.

The cause of a flaky ``test_turn_end.py`` (the chat said the turn was over while the simulated agy
still ran its first turn's checkpoint): the plugin ended the turn on the mapper's idle, which is agy's
final reply, not agy's run being over.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING
from tests.held_reply import hold_after_reply

from .test_runner import runner_for
from .zygote import Zygote

LISTING = "GetAllCascadeTrajectories"
WAIT = 60.0


async def test_the_turn_ends_when_agys_run_does_not_at_its_reply(
    plugin_zygote: Zygote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replied, release = hold_after_reply(monkeypatch)
    async with (
        Simulator(profile="1.0.10", pace=0.05, gate_timeout=None) as sim,
        runner_for(plugin_zygote, sim, tmp_path) as runner,
    ):
        turn = await runner.message("Say hello in one short sentence.")
        async with asyncio.timeout(WAIT):
            await replied.wait()
            while turn.text != GREETING and not turn.done.is_set():  # the whole reply reached omnigent
                await asyncio.sleep(0.02)
            # agy was asked for its run status again and again since: it still runs, the turn goes on
            asked = sim.calls.count(LISTING)
            while sim.calls.count(LISTING) < asked + 5 and not turn.done.is_set():
                await asyncio.sleep(0.02)
        assert turn.terminal is None, turn.terminal
        assert sim.is_running()
        release.set()
        terminal = await turn.finished(timeout=WAIT)
        assert terminal["type"] == "response.completed"
        assert not sim.is_running()  # the turn ended only after agy's had
        assert sim.steps()[-1]["type"] == "CORTEX_STEP_TYPE_CHECKPOINT"
        assert turn.text == GREETING
