"""Issue #20, case 6: a cursor that cannot be read is moved aside with a notice saying what the
restart repeats; it used to raise TypeError / OverflowError from open_session on every restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.ports.events import Notice, UserMessage
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on, run_turn

DAMAGE = {
    "committed is a number": {"committed": [], "state": {"committed": 5}, "generation": 1},
    "generation 1e999": {"committed": [], "state": {}, "generation": "__INF__"},
    "state the mapper cannot take": {"committed": [], "state": {"live": "not a map", "status": 7}},
    "journal record of the wrong shape": {"committed": [], "state": {}, "generation": 3},
}


def damage(store: FileCursorStore, cascade_id: str, what: str) -> Path:
    body = {"cascade_id": cascade_id, **DAMAGE[what]}
    path = store.path_for(cascade_id)
    path.write_text(json.dumps(body).replace('"__INF__"', "1e999"))
    if what.startswith("journal"):
        store.journal_path(cascade_id, 3).write_text('{"l": {"k": {"text+": "x", "text@": 1e999}}}\n')
    return path


@pytest.mark.parametrize("what", list(DAMAGE))
async def test_a_damaged_cursor_is_set_aside_with_a_notice_and_the_session_runs(
    sim: Simulator, tmp_path: Path, what: str
) -> None:
    (tmp_path / "cursors").mkdir(mode=0o700)
    store = FileCursorStore(tmp_path / "cursors")
    await sim.submit_user_turn("Say hello in one short sentence.")  # history to repeat
    await sim.wait_idle(15)
    path = damage(store, sim.cascade_id, what)
    sink = RecordingSink()
    async with harness_on(sim, sink, cursor_store=store) as session:
        await sink.wait_for(
            lambda: any(isinstance(e, Notice) and "cursor" in e.text for e in sink.events), 15
        )
        await run_turn(session, sink, "Say hello again.")
    notice = next(e for e in sink.events if isinstance(e, Notice) and "cursor" in e.text)
    assert notice.level == "warning"
    assert "moved aside" in notice.text and "again" in notice.text  # says what the restart repeats
    assert list(path.parent.glob("*.corrupt"))  # kept for a human, out of the way
    users = [e.text for e in sink.events if isinstance(e, UserMessage)]
    assert users[-1] == "Say hello again." and "Say hello in one short sentence." in users
    assert FileCursorStore(tmp_path / "cursors").load(sim.cascade_id) is not None  # a good one again
