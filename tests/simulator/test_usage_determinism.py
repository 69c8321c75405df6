"""The simulator's token counts depend only on the conversation, never on run-specific ids.

tests/tmux/test_old_profile.py compares two simulators' usage events; they differed by one token in
about a third of the runs because the session id (part of every planner step, and the token count
grows with the conversation's size) was drawn with a varying number of digits.
"""

from __future__ import annotations

import re

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.steps import shape

TURNS = ["Say hello in one short sentence.", "list the directory"]


def test_session_ids_have_the_recorded_width() -> None:
    recorded = shape("planner_response_text")["metadata"]["modelUsage"]["responseHeader"]["sessionID"]
    assert re.fullmatch(r"-\d{19}", recorded)
    widths = {len(Simulator().session_id) for _ in range(400)}  # a short id came up ~1 in 10 before
    assert widths == {len(recorded)}


async def _usage() -> list[dict[str, str]]:
    async with Simulator(pace=0.0, gate_timeout=None) as sim:
        for text in TURNS:
            await sim.submit_user_turn(text)
            await sim.wait_idle(timeout=20)
        out = []
        for step in sim.steps():
            usage = dict(step.get("metadata", {}).get("modelUsage") or {})
            if usage:
                out.append({k: v for k, v in usage.items() if k.endswith("Tokens")})
        return out


async def test_the_same_turns_cost_the_same_tokens_in_every_run() -> None:
    runs = [await _usage() for _ in range(4)]
    assert runs[0] and all(run == runs[0] for run in runs)
