"""Issue 46 item 8: the ledger is state, kept where state outlives a logout, a reboot and a cache
clean-up: ``$XDG_STATE_HOME/agy-harness/ledger`` (``~/.local/state/...``), 0700 with 0600 files (it was
``$XDG_RUNTIME_DIR/agy-harness/ledger`` or ``~/.cache/agy-harness/ledger``). An earlier version's
ledger is moved there once, byte for byte, its chain verified -- through ``agy-harness audit`` in
processes of their own: several starting at once move it once; a move interrupted at any point loses
and doubles nothing; a new place that holds other records is never merged into. Each failed before
(the ledger stayed in the run-time directory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from agy_harness.adapters.private_state import private_dir
from agy_harness.adapters.store import ledger_chain as C
from agy_harness.adapters.store.ledger_file import now

from .helpers import records, verified

OLD_RECORDS = 5


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A user's environment of its own: HOME, a private XDG_RUNTIME_DIR; no ledger or state override."""
    for name in ("AGY_HARNESS_LEDGER_DIR", "AGY_HARNESS_STATE_DIR", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir(mode=0o700)
    (tmp_path / "run").mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    return dict(os.environ)


def new_place(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".local" / "state" / "agy-harness" / "ledger"


def earlier(directory: Path, n: int = OLD_RECORDS) -> bytes:
    """What an earlier version left: records without a signature of their own, a signed checkpoint
    after each, its keys; in a 0700 directory as it made them. Returns the records' bytes."""
    private_dir(directory)
    key = Ed25519PrivateKey.generate()
    raw = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    (directory / "ed25519.key").write_bytes(raw)
    (directory / "ed25519.pub").write_bytes(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    prev, lines, cps = C.GENESIS, [], []
    for seq in range(1, n + 1):
        body = {"gate_id": f"gate-{seq}", "verdict": "allow", "decided_by": {"kind": "human"}}
        line, prev = C.seal(seq, prev, now(), "decision", body)
        lines.append(line)
        cps.append(C.checkpoint(seq, prev, key))
    (directory / "ledger.jsonl").write_bytes(b"".join(lines))
    (directory / "checkpoints.jsonl").write_bytes(b"".join(cps))
    for f in directory.iterdir():
        f.chmod(0o600)
    assert verified(directory).ok
    return b"".join(lines)


def audit(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agy_harness.composition.cli", "audit", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def verify(env: dict[str, str]) -> tuple[int, str, str]:
    child = audit(env, "verify")
    out, err = child.communicate(timeout=120)
    return child.returncode, out, err


def moved_away(old: Path) -> list[Path]:
    return sorted(old.parent.glob("ledger.moved-*"))


def test_a_new_ledger_is_state_private_and_lasting(tmp_path: Path, home: dict[str, str]) -> None:
    from agy_harness.adapters.store.ledger_file import FileLedger
    from agy_harness.ports.protocols import LedgerEntry

    ledger = FileLedger()
    ledger.record_now(LedgerEntry(type="decision", body={"gate_id": "g", "verdict": "allow"}))
    ledger.close()
    where = new_place(tmp_path)
    assert ledger.directory == where and records(where)[0]["body"]["gate_id"] == "g"
    assert not (tmp_path / "run" / "agy-harness" / "ledger").exists()
    assert {p.name: p.stat().st_mode & 0o777 for p in [where, *where.iterdir()]} == {
        "ledger": 0o700, "ledger.jsonl": 0o600, "checkpoints.jsonl": 0o600, "ed25519.key": 0o600,
        "ed25519.pub": 0o600,
    }  # fmt: skip
    assert (where.parent.stat().st_mode & 0o777) == 0o700
    code, out, _ = verify(home)
    assert code == 0 and f"the decision ledger at {where} verifies: 1 records" in out


@pytest.mark.parametrize("old_root", ["run", "cache"])
def test_an_earlier_ledger_is_moved_once_with_its_chain(
    tmp_path: Path, home: dict[str, str], old_root: str
) -> None:
    if old_root == "cache":  # no run-time directory: earlier versions used ~/.cache
        del home["XDG_RUNTIME_DIR"]
        old = tmp_path / "home" / ".cache" / "agy-harness" / "ledger"
    else:
        old = tmp_path / "run" / "agy-harness" / "ledger"
    data = earlier(old)
    code, out, err = verify(home)
    where = new_place(tmp_path)
    assert code == 0, err
    assert out == (
        f"the decision ledger at {where} verifies: {OLD_RECORDS} records, chained and signed; "
        f"signed checkpoints through record {OLD_RECORDS}\n"
    )
    assert (where / "ledger.jsonl").read_bytes() == data and not old.exists()
    kept = moved_away(old)
    assert len(kept) == 1 and (kept[0] / "ledger.jsonl").read_bytes() == data
    assert {p.stat().st_mode & 0o777 for p in where.iterdir()} == {0o600}
    # the chain goes on in the new place, with the moved key
    from agy_harness.adapters.store.ledger_file import FileLedger
    from agy_harness.ports.protocols import LedgerEntry

    ledger = FileLedger(where)
    assert ledger.record_now(LedgerEntry(type="decision", body={"gate_id": "next"})) == OLD_RECORDS + 1
    ledger.close()
    code, out, _ = verify(home)
    assert code == 0 and f"{OLD_RECORDS + 1} records" in out
    assert len(moved_away(old)) == 1  # moved once: nothing more to move


def test_several_processes_starting_at_once_move_it_once(tmp_path: Path, home: dict[str, str]) -> None:
    old = tmp_path / "run" / "agy-harness" / "ledger"
    data = earlier(old)
    children = [audit(home, "verify") for _ in range(4)]
    results = [(c.communicate(timeout=180), c.returncode) for c in children]
    assert all(code == 0 and f"verifies: {OLD_RECORDS} records" in out for (out, _), code in results), results
    assert (new_place(tmp_path) / "ledger.jsonl").read_bytes() == data
    assert len(moved_away(old)) == 1


@pytest.mark.parametrize("stage", ["copying", "keys and checkpoints in place", "records in place"])
def test_a_move_interrupted_halfway_loses_and_doubles_nothing(
    tmp_path: Path, home: dict[str, str], stage: str
) -> None:
    old = tmp_path / "run" / "agy-harness" / "ledger"
    data = earlier(old)
    where = new_place(tmp_path)
    private_dir(where)
    names = ["ed25519.key", "ed25519.pub", "checkpoints.jsonl"]
    if stage == "copying":  # killed while writing the copies
        (where / "ledger.jsonl.moving").write_bytes(data[: len(data) // 2])
        (where / "ed25519.key.moving").write_bytes(b"")
    else:
        for name in names + (["ledger.jsonl"] if stage == "records in place" else []):
            (where / name).write_bytes((old / name).read_bytes())
            (where / name).chmod(0o600)
    code, out, err = verify(home)
    assert code == 0 and f"verifies: {OLD_RECORDS} records" in out, (out, err)
    assert (where / "ledger.jsonl").read_bytes() == data
    assert not old.exists() and len(moved_away(old)) == 1
    assert sorted(p.name for p in where.iterdir() if not p.name.endswith(".moving")) == sorted(
        [*names, "ledger.jsonl"]
    )


def test_a_new_place_with_records_of_its_own_is_never_merged_into(
    tmp_path: Path, home: dict[str, str]
) -> None:
    old = tmp_path / "run" / "agy-harness" / "ledger"
    data = earlier(old)
    mine = earlier(new_place(tmp_path), 2)
    code, out, _ = verify(home)
    assert code == 0 and "verifies: 2 records" in out
    assert (new_place(tmp_path) / "ledger.jsonl").read_bytes() == mine
    assert (old / "ledger.jsonl").read_bytes() == data and not moved_away(old)  # left where it was


def test_verify_where_this_install_has_no_ledger_yet_says_so(tmp_path: Path, home: dict[str, str]) -> None:
    code, out, err = verify(home)
    assert (code, out) == (1, "")
    assert err == (
        f"agy-harness audit: there is no decision ledger at {new_place(tmp_path)} (no such directory)\n"
    )
