"""Reading the decision ledger's files (``audit``, the verifier, a history view), as the writer
(:mod:`.ledger_file`) leaves them: relative to the verified private directory, never through a
symlink, only a regular file of this user's, bounded; the ledger and its checkpoints together under
the writers' lock (:func:`read_both`), taken through the directory's turnstile (:func:`locked`, which
the writer takes too)."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from agy_harness.adapters.private_state import UnsafeStateError, open_dir
from agy_harness.ports.errors import LedgerUnavailable

LEDGER = "ledger.jsonl"
CHECKPOINTS = "checkpoints.jsonl"
FLAGS = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def read_file(directory: Path, name: str, limit: int = 1 << 31) -> bytes:
    """A ledger file's bytes (b"" when it does not exist); refuses a symlink or a file not ours."""
    with open_dir(directory) as fd:
        try:
            f = os.open(name, os.O_RDONLY | FLAGS, dir_fd=fd)
        except FileNotFoundError:
            return b""
        try:
            info = os.fstat(f)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                raise UnsafeStateError(1, f"{directory / name} is not a regular file of yours")
            chunks = []
            while chunk := os.read(f, 1 << 20):
                chunks.append(chunk)
                limit -= len(chunk)
                if limit < 0:
                    raise LedgerUnavailable(f"{directory / name} is too large to read")
            return b"".join(chunks)
        finally:
            os.close(f)


def read_both(directory: Path) -> tuple[bytes, bytes]:
    """The ledger's and its checkpoints' bytes, read under the writers' lock (shared: readers do not
    wait for each other), so never between a record and its checkpoint: what a verifier reads is a
    state some writer left, not one half-written (b"" for a file that does not exist). The lock is
    taken through the turnstile (:func:`locked`): a flood of records cannot keep a reader out."""
    with open_dir(directory) as fd:
        try:
            f = os.open(LEDGER, os.O_RDONLY | FLAGS, dir_fd=fd)
        except FileNotFoundError:
            return b"", read_file(directory, CHECKPOINTS)
        try:
            locked(fd, f, fcntl.LOCK_SH)
            return read_file(directory, LEDGER), read_file(directory, CHECKPOINTS)
        finally:
            os.close(f)  # (the lock goes with it)


def locked(dir_fd: int, ledger: int, mode: int) -> bool:
    """``flock(ledger, mode)`` taken through a turnstile, the directory's own ``flock``: each taker
    passes it (held only until the ledger's lock is had), so a reader waiting for the lock holds the
    turnstile and the next writer waits behind it -- a writer appending record after record would
    otherwise take the lock again each time before the woken reader ran (seen: ``audit verify``
    waiting for ever beside a writer in a loop). False when ``mode`` has LOCK_NB and either is held."""
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX | (mode & fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    try:
        fcntl.flock(ledger, mode)
    except BlockingIOError:
        return False
    finally:
        fcntl.flock(dir_fd, fcntl.LOCK_UN)
    return True


def read_tail(directory: Path, name: str, limit: int) -> tuple[bytes, bool]:
    """The last ``limit`` bytes of a ledger file, starting at a line (b"" when it does not exist), and
    whether that is the whole file; refuses a symlink or a file not ours."""
    with open_dir(directory) as fd:
        try:
            f = os.open(name, os.O_RDONLY | FLAGS, dir_fd=fd)
        except FileNotFoundError:
            return b"", True
        try:
            info = os.fstat(f)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                raise UnsafeStateError(1, f"{directory / name} is not a regular file of yours")
            start = max(0, info.st_size - limit)
            chunks, at = [], start
            while at < info.st_size and (chunk := os.pread(f, min(1 << 20, info.st_size - at), at)):
                chunks.append(chunk)
                at += len(chunk)
            data = b"".join(chunks)
            if start:  # the first line is only the end of a record: dropped
                data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
            return data, start == 0
        finally:
            os.close(f)
