"""Where the decision ledger lives, and its one move there from where earlier versions kept it.

A ledger is state that must outlive the session: ``ledger`` under
:func:`~agy_harness.adapters.private_state.durable_root` (``$XDG_STATE_HOME/agy-harness``, by default
``~/.local/state/agy-harness``; 0700, files 0600), or ``AGY_HARNESS_LEDGER_DIR``. Earlier versions kept
it under the run-time state root: ``$XDG_RUNTIME_DIR/agy-harness`` (removed at logout and reboot) or
``~/.cache/agy-harness`` (removed to reclaim space). :func:`moved_once` moves such a ledger, the first
time this install's ledger is opened or read:

* Under the old ledger's own writers' lock (``flock`` on its ``ledger.jsonl``, which earlier versions
  take to append): no writer, old or new, appends while it moves, and a second process that starts at
  the same moment waits there, then finds it moved and does nothing.
* Every file of the old directory (the records, the checkpoints, the signing keys, the export key) is
  copied under a temporary name, flushed, read back and compared byte for byte, and the copy verified
  as the original was (the same report); only then renamed into place, ``ledger.jsonl`` last (its
  records in the new place mean: moved), and the new directory flushed.
* The old directory is then renamed ``ledger.moved-<UTC time>`` beside itself: kept, never deleted
  (an older harness still running keeps appending there; ``audit verify --ledger`` reads it).

Interrupted at any point, nothing is lost and nothing doubled: before ``ledger.jsonl`` is renamed the
old ledger is whole and untouched and the next start moves it again (over the leftovers); after, the
new one holds every record and the next start, finding the old one a prefix of it, only renames the old
one away. A new place that already holds other records is never merged into: the old one stays where
it is, and a warning says where (a chain cannot hold two histories).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import os
import stat
from pathlib import Path

from agy_harness.adapters.private_state import durable_root, open_dir, private_dir, transient_roots
from agy_harness.ports.errors import LedgerUnavailable

from . import ledger_verify as V

log = logging.getLogger("agy_harness.ledger")

ENV_LEDGER_DIR = "AGY_HARNESS_LEDGER_DIR"
LEDGER = "ledger.jsonl"
CHECKPOINTS = "checkpoints.jsonl"
#: the files of a ledger's directory, in the order a move renames them into place (the records last)
FILES = ("ed25519.key", "ed25519.pub", "es256.key", CHECKPOINTS, LEDGER)
MOVING = ".moving"
_FLAGS = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

_DONE: set[Path] = set()


def default_dir() -> Path:
    override = os.environ.get(ENV_LEDGER_DIR)
    return Path(override) if override else durable_root() / "ledger"


def old_dirs() -> list[Path]:
    """Where earlier versions kept this install's ledger (none when a directory is set)."""
    if os.environ.get(ENV_LEDGER_DIR):
        return []
    return [root / "ledger" for root in transient_roots()]


def moved_once(directory: Path) -> None:
    """Move an earlier version's ledger into ``directory`` when that is this install's default place
    (see the module doc); once a process. Raises LedgerUnavailable when a move failed (nothing is
    then recorded in the new place: the old ledger stays whole where it is)."""
    where = Path(os.path.abspath(directory))
    if where in _DONE or os.environ.get(ENV_LEDGER_DIR) or where != Path(os.path.abspath(default_dir())):
        return
    for old in old_dirs():
        old = Path(os.path.abspath(old))
        if old != where and _holds_records(old):
            try:
                _move(old, where)
            except OSError as exc:
                raise LedgerUnavailable(
                    f"the decision ledger at {old} could not be moved to {where}: {exc}"
                ) from exc
    _DONE.add(where)


def _holds_records(directory: Path) -> bool:
    try:
        info = os.lstat(directory / LEDGER)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size > 0


def _read(dir_fd: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | _FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise LedgerUnavailable(f"{name} is not a regular file of yours")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write(dir_fd: int, name: str, data: bytes) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)  # (a leftover of a move interrupted before)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _report(files: dict[str, bytes]) -> list[str]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw = files.get("ed25519.pub")
    public = Ed25519PublicKey.from_public_bytes(raw) if raw is not None and len(raw) == 32 else None
    return V.verify(files.get(LEDGER, b""), files.get(CHECKPOINTS, b""), public).problems


def _move(old: Path, new: Path) -> None:
    with open_dir(old) as old_fd:
        lock = os.open(LEDGER, os.O_RDWR | _FLAGS, dir_fd=old_fd)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the old writers' lock: none appends while it moves
            try:
                here = os.stat(old, follow_symlinks=False)
            except FileNotFoundError:
                return  # another process moved it while this one waited for the lock
            mine = os.fstat(old_fd)
            if (here.st_dev, here.st_ino) != (mine.st_dev, mine.st_ino):
                return
            files = {name: data for name in FILES if (data := _read(old_fd, name)) is not None}
            private_dir(new.parent)
            with open_dir(new) as new_fd:
                there = _read(new_fd, LEDGER) or b""
                if there and not there.startswith(files[LEDGER]):
                    log.warning(
                        "decision ledger: an earlier ledger at %s is not moved: %s holds other records "
                        "(audit verify --ledger %s reads it)", old, new, old,
                    )  # fmt: skip
                    return
                if not there:
                    _copy(files, new_fd, new)
            gone = old.with_name(f"ledger.moved-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S.%fZ}")
            os.rename(old, gone)
            parent = os.open(old.parent, os.O_RDONLY | os.O_DIRECTORY | _FLAGS)
            try:
                os.fsync(parent)
            finally:
                os.close(parent)
            records = files[LEDGER].count(b"\n")
            log.warning(
                "decision ledger moved to %s (%d records, byte for byte, verified as before); the old "
                "directory is kept as %s", new, records, gone,
            )  # fmt: skip
        finally:
            os.close(lock)


def _copy(files: dict[str, bytes], new_fd: int, new: Path) -> None:
    """Each file under a temporary name, read back and checked, then renamed into place (records last)."""
    for name, data in files.items():
        _write(new_fd, name + MOVING, data)
    copied = {name: _read(new_fd, name + MOVING) for name in files}
    if copied != files or _report(files) != _report({k: v or b"" for k, v in copied.items()}):
        raise OSError(f"the copy in {new} does not read back as the original")
    for name in FILES:
        if name in files:
            os.replace(name + MOVING, name, src_dir_fd=new_fd, dst_dir_fd=new_fd)
    os.fsync(new_fd)
