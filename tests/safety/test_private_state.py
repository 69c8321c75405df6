"""Issue #20, case 1: the library's run-time state is private; another local user cannot plant,
redirect or read it, and nothing the library did not create is ever deleted."""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

import pytest

from agy_harness.adapters.private_state import UnsafeStateError, private_dir, state_root
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.claims import RETENTION, ClaimRegistry
from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.ports.events import Notice, Rotation
from agy_harness.ports.protocols import Cursor
from tests.fakes import RecordingSink
from tests.integration.helpers import harness_on

from .other_user import other_user, shared_dir

THREE_DAYS = 3 * 24 * 3600


@pytest.fixture
def victim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The victim's config directory with a 3-day-old settings.json; the state goes where the
    library puts it by default (a fresh cache dir, no runtime dir, no override)."""
    config = tmp_path / "config"
    config.mkdir(mode=0o700)
    settings = config / "settings.json"
    settings.write_text('{"theme": "dark"}')
    old = time.time() - THREE_DAYS
    os.utime(settings, (old, old))
    for var in ("AGY_HARNESS_CLAIMS_DIR", "AGY_HARNESS_STATE_DIR", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return config


def test_a_claims_directory_planted_in_the_temp_dir_by_another_user_is_not_used(
    victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reproduced: another uid made ``$TMPDIR/agy-harness-<uid>/claims`` a symlink to the victim's
    config; sessions wrote their claims there and the 24 h prune deleted settings.json."""
    intruder = other_user()
    with shared_dir() as tmp:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        planted = tmp / f"agy-harness-{os.getuid()}"
        intruder.run(["mkdir", "-m", "777", str(planted)])
        intruder.run(["ln", "-s", str(victim), str(planted / "claims")])

        first, second = ClaimRegistry(), ClaimRegistry()
        first.claim("conversation-1")
        second.claim("conversation-2")
        assert second.others() == {"conversation-1"}  # claims still work, in a private place
        assert first.others() == {"conversation-2"}

        assert sorted(p.name for p in victim.iterdir()) == ["settings.json"]
        assert (victim / "settings.json").read_text() == '{"theme": "dark"}'
        root = first.root
        assert not str(root).startswith(str(tmp)) and root.parent == state_root()
        info = os.lstat(root)
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
        assert info.st_uid == os.geteuid()


@pytest.mark.parametrize("plant", ["symlink", "their directory"])
def test_an_unsafe_claims_location_is_refused_and_explained(
    victim: Path, monkeypatch: pytest.MonkeyPatch, plant: str
) -> None:
    """A location another user made (their directory, or a symlink of theirs) is never written,
    read or pruned; the registry says why and ``others`` refuses (no /clear is then followed)."""
    intruder = other_user()
    with shared_dir() as tmp:
        where = tmp / "claims"
        if plant == "symlink":
            intruder.run(["ln", "-s", str(victim), str(where)])
        else:
            intruder.run(["mkdir", "-m", "777", str(where)])
            intruder.run(["touch", "-d", "3 days ago", str(where / f"{'a' * 32}.{'b' * 32}.json")])
        monkeypatch.setenv("AGY_HARNESS_CLAIMS_DIR", str(where))
        registry = ClaimRegistry()
        registry.claim("conversation-1")
        assert registry.problem is not None
        assert ("symlink" if plant == "symlink" else "belongs to uid") in registry.problem
        with pytest.raises(UnsafeStateError):
            registry.others()
        assert sorted(p.name for p in victim.iterdir()) == ["settings.json"]
        if plant != "symlink":
            assert [p.name for p in where.iterdir()] == [f"{'a' * 32}.{'b' * 32}.json"]  # not pruned


def test_the_prune_deletes_only_claims_the_library_wrote(victim: Path) -> None:
    registry = ClaimRegistry()
    registry.claim("conversation-1")
    root = registry.root
    old = time.time() - RETENTION - 60
    foreign = root / "notes.json"
    foreign.write_text("{}")
    linked = root / f"{'c' * 32}.{'d' * 32}.json"
    linked.symlink_to(victim / "settings.json")
    for path in (foreign, *root.glob("*.json")):
        os.utime(path, (old, old), follow_symlinks=False)
    os.utime(linked, (old, old), follow_symlinks=False)
    assert ClaimRegistry().others() == set()  # its own claim expired and was pruned
    assert sorted(p.name for p in root.iterdir()) == sorted(["notes.json", linked.name])
    assert (victim / "settings.json").exists()


def test_a_private_dir_with_a_writable_ancestor_is_refused() -> None:
    with shared_dir() as tmp:
        os.chmod(tmp, 0o777)  # writable by all and not sticky: anyone may swap what is below
        with pytest.raises(UnsafeStateError, match="writable by other users"):
            private_dir(tmp / "state")


async def test_with_an_unsafe_claims_location_no_clear_is_followed_and_the_user_is_told(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claims it cannot trust say nothing about the other sessions: the rule that needs them fails
    closed (the session stays) and a notice says why."""
    intruder = other_user()
    with shared_dir() as tmp:
        intruder.run(["mkdir", "-m", "777", str(tmp / "claims")])
        monkeypatch.setenv("AGY_HARNESS_CLAIMS_DIR", str(tmp / "claims"))
        sink = RecordingSink()
        async with harness_on(sim, sink) as session:
            bound = session.cascade_id
            await sim.submit_user_turn("/clear")
            await sim.submit_user_turn("Say hello again.")  # typed in agy's TUI after /clear
            await sink.wait_for(
                lambda: any(isinstance(e, Notice) and "claims cannot be read" in e.text for e in sink.events)
            )
            assert session.cascade_id == bound
        assert not [e for e in sink.events if isinstance(e, Rotation)]
        assert [p.name for p in (tmp / "claims").iterdir()] == []


def test_a_runtime_dir_that_is_not_the_users_own_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """``su`` can leave another user's XDG_RUNTIME_DIR in the environment: the cache dir is used."""
    intruder = other_user()
    with shared_dir() as tmp:
        intruder.run(["mkdir", "-m", "700", str(tmp / "run")])
        monkeypatch.delenv("AGY_HARNESS_STATE_DIR", raising=False)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp / "run"))
        assert not str(state_root()).startswith(str(tmp))
        os.chmod(tmp, 0o700)  # (ours and private: now it is the one)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp))
        assert state_root() == tmp / "agy-harness"


def _cursor() -> Cursor:
    return Cursor(cascade_id="c-1", committed=["traj/1"], state={"model": "m"})


def test_a_cursor_store_makes_its_directory_private() -> None:
    """``FileCursorStore(dir)``: a missing ``dir`` is made 0700, and the cursor in it is the user's."""
    with shared_dir() as tmp:
        where = tmp / "made" / "cursors"
        store = FileCursorStore(where)
        store.save(_cursor())
        for made in (where, where.parent):
            info = os.lstat(made)
            assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
        assert store.load("c-1") == _cursor()


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_a_cursor_directory_others_may_write_to_is_refused(mode: int) -> None:
    """A directory of one's own that others may write to (they could plant or swap a cursor) is
    refused; one they may only read (the user's choice of a directory) is used."""
    with shared_dir() as tmp:
        where = tmp / "cursors"
        where.mkdir()
        os.chmod(where, mode)
        with pytest.raises(UnsafeStateError, match="open to other users"):
            FileCursorStore(where).save(_cursor())
        assert list(where.iterdir()) == []
        os.chmod(where, 0o750)
        FileCursorStore(where).save(_cursor())
        assert len(list(where.iterdir())) == 1


def test_a_cursor_directory_another_user_owns_is_refused() -> None:
    intruder = other_user()
    with shared_dir() as tmp:
        where = tmp / "theirs"
        intruder.run(["mkdir", "-m", "755", str(where)])
        with pytest.raises(UnsafeStateError, match="belongs to uid"):
            FileCursorStore(where).save(_cursor())
        assert list(where.iterdir()) == []
