"""core.interrupt_outcome: what an interrupt did, read from agy's steps of the current turn (issue 47),
on steps in agy's recorded shapes (the simulator's builders)."""

from __future__ import annotations

from typing import Any

from agy_harness.adapters.simulator import steps as st
from agy_harness.core.interrupt_outcome import turn_end

C, T = "cascade-1", "trajectory-1"


def turn(first: int, execution: str) -> list[dict[str, Any]]:
    """A USER_INPUT at ``first`` and the planner that answers it (GENERATING)."""
    return [
        st.user_input(st.Where(C, T, first, 0, execution), "hello", "MODEL_X", "/home/u"),
        st.planner(st.Where(C, T, first + 1, 0, execution), "MODEL_X"),
    ]


def test_generating_is_open_cancelled_is_stopped_done_is_finished() -> None:
    steps = turn(0, "e1")
    assert turn_end(steps).outcome == "open"
    st.planner_cancel(steps[1])
    end = turn_end(steps)
    assert end.outcome == "stopped" and end.names == (f"{T}/1",) and end.turn_at == 0
    steps = turn(0, "e1")
    st.planner_done(steps[1], {}, text="Hello!")
    assert turn_end(steps).outcome == "finished"
    assert turn_end(steps).seen_by({f"{T}/1"}) and not turn_end(steps).seen_by(set())


def test_only_the_last_turn_counts() -> None:
    earlier = turn(0, "e1")
    st.planner_cancel(earlier[1])  # an earlier turn that was interrupted
    now = turn(2, "e2")
    st.planner_done(now[1], {}, text="Hello!")
    end = turn_end([*earlier, *now])
    assert end.outcome == "finished" and end.turn_at == 2
