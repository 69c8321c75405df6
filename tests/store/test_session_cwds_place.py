"""The ACP sessions' directories (``session/list {cwd}``) outlive a logout, a reboot and a cache
clean-up: they are kept under ``$XDG_STATE_HOME/agy-harness``, as the ledger is, never under
``$XDG_RUNTIME_DIR`` (removed at logout) or the cache. Before: ``<runtime dir>/agy-harness/acp``, so an
editor's ``session/list`` after a reboot no longer found the sessions made in its project."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agy_harness.adapters.store.session_cwds import CWDS_FILE, SessionCwds


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    run, state, cache = tmp_path / "run", tmp_path / "state", tmp_path / "cache"
    run.mkdir(mode=0o700)
    monkeypatch.delenv("AGY_HARNESS_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return {
        "run": run / "agy-harness" / "acp",
        "state": state / "agy-harness" / "acp",
        "cache": cache / "agy-harness" / "acp",
    }


def test_the_sessions_directories_are_kept_in_the_durable_state_directory(places: dict[str, Path]) -> None:
    SessionCwds().remember("s-1", "/home/me/project")
    kept = places["state"] / CWDS_FILE
    assert json.loads(kept.read_text()) == {"s-1": "/home/me/project"}
    assert (kept.stat().st_mode & 0o777, places["state"].stat().st_mode & 0o777) == (0o600, 0o700)
    assert not (places["run"] / CWDS_FILE).exists() and not (places["cache"] / CWDS_FILE).exists()
    assert SessionCwds().all() == {"s-1": "/home/me/project"}  # a new process reads it back


@pytest.mark.parametrize("where", ["run", "cache"])
def test_what_an_earlier_version_kept_is_read_and_carried_over(places: dict[str, Path], where: str) -> None:
    earlier = places[where]
    earlier.mkdir(parents=True, mode=0o700)
    os.chmod(earlier.parent, 0o700)
    (earlier / CWDS_FILE).write_text(json.dumps({"old": "/srv/old"}))
    os.chmod(earlier / CWDS_FILE, 0o600)
    assert SessionCwds().all() == {"old": "/srv/old"}
    SessionCwds().remember("new", "/srv/new")
    assert json.loads((places["state"] / CWDS_FILE).read_text()) == {"old": "/srv/old", "new": "/srv/new"}
    (earlier / CWDS_FILE).write_text(
        json.dumps({"stale": "/x"})
    )  # once the durable file exists, it alone counts
    assert SessionCwds().all() == {"old": "/srv/old", "new": "/srv/new"}
