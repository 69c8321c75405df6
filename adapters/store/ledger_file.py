"""The decision ledger on disk: ``ledger.jsonl`` (the chained records), ``checkpoints.jsonl`` (signed
``{sequence, head}``) and the per-install keys, in a private directory (``ledger`` under
:func:`~agy_harness.adapters.private_state.durable_root`, or ``AGY_HARNESS_LEDGER_DIR``; moved there
once from where earlier versions kept it: :mod:`.ledger_place`): 0700, verified, files 0600, opened
relative to the verified directory with ``O_NOFOLLOW``.

Writing never waits on the event loop: :meth:`FileLedger.record`, under an exclusive ``flock``
(several sessions of this user share the ledger), reads what other writers appended since, chains the
record to the real last one, signs it, appends it and its checkpoint, and returns: the record is in
the file, which a kill of the process no longer loses. When the lock is free at once and no record
is queued before it, that is done right there (a few system calls and a signature, ~0.1 ms);
otherwise (a first record, which opens the files; a lock another writer holds) one writer thread does
it, in the order given. The ``fsync`` (the ledger, then its checkpoints) runs on a thread of its own,
off the caller's path, one for a burst of records: an answer waits for its record to be written, not
for the disk, and a record never waits behind the flush of the ones before it. A write that fails is
cut back off the file and raises :class:`~agy_harness.ports.errors.LedgerUnavailable`. A kill at any
point leaves a ledger that verifies: at most the record being written is torn, and the next writer
cuts a torn final line off (it was never acknowledged, so the answer it recorded was never sent).
Reading the files (a verifier's, an audit's) is :mod:`.ledger_read`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import fcntl
import logging
import os
import stat
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from agy_harness.adapters.private_state import create_file, open_dir, read_own_file
from agy_harness.ports.errors import LedgerUnavailable

from . import ledger_chain as C
from .ledger_place import ENV_LEDGER_DIR as ENV_LEDGER_DIR
from .ledger_place import default_dir as default_dir
from .ledger_place import moved_once
from .ledger_read import CHECKPOINTS as CHECKPOINTS
from .ledger_read import FLAGS, locked
from .ledger_read import LEDGER as LEDGER

if TYPE_CHECKING:  # (a type only: `audit` reads the ledger without the event models)
    from agy_harness.ports.protocols import LedgerEntry

log = logging.getLogger("agy_harness.ledger")

PRIVATE_KEY = "ed25519.key"
PUBLIC_KEY = "ed25519.pub"
KEY_BYTES = 4096
TAIL_READ = 1 << 20  # what is read back to find the last record (a record is far smaller)
SEEN_KEPT = 4096  # gate ids whose decision this ledger holds (an "unless decided" record is skipped)


def now() -> str:
    """UTC, milliseconds, ``Z`` (RFC 3339): sortable as text."""
    stamp = dt.datetime.now(dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def load_keys(directory: Path, *, create: bool) -> tuple[Ed25519PrivateKey | None, Ed25519PublicKey | None]:
    """The install's Ed25519 key pair in ``directory`` (made on first use when ``create``)."""
    with open_dir(directory) as fd:
        raw = read_own_file(PRIVATE_KEY, dir_fd=fd, limit=KEY_BYTES)
        if raw is None and create:
            key = Ed25519PrivateKey.generate()
            # (imported here, when a key is made, and by ledger_chain.key_id at the first record:
            # cryptography's serialization loads its RSA, DSA, EC and SSH modules too, ~18 ms of CPU
            # at the start of every session, most of which record nothing)
            from cryptography.hazmat.primitives.serialization import (
                Encoding,
                NoEncryption,
                PrivateFormat,
                PublicFormat,
            )

            with contextlib.suppress(FileExistsError):  # another session made it first: read theirs
                create_file(
                    PRIVATE_KEY, key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()), dir_fd=fd
                )
                create_file(
                    PUBLIC_KEY, key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw), dir_fd=fd
                )
            raw = read_own_file(PRIVATE_KEY, dir_fd=fd, limit=KEY_BYTES)
        if raw is not None and len(raw) == 32:
            private = Ed25519PrivateKey.from_private_bytes(raw)
            return private, private.public_key()
        pub = read_own_file(PUBLIC_KEY, dir_fd=fd, limit=KEY_BYTES)
        return None, (Ed25519PublicKey.from_public_bytes(pub) if pub is not None and len(pub) == 32 else None)


class FileLedger:
    """The :class:`~agy_harness.ports.protocols.DecisionLedger` of this install (see the module doc)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else default_dir()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agy-harness-ledger")
        self._fds: tuple[int, int, int] | None = None  # directory, ledger, checkpoints
        self._key: Ed25519PrivateKey | None = None
        self._key_id = ""
        self._seq = 0
        self._head = C.GENESIS
        self._size = 0  # the ledger's size as this writer last saw it
        #: gate id -> its decisions agy may have taken (sequence -> who, verdict, scope, when): one
        #: agy did not take (a ``delivery`` record says ``taken: false``) is dropped
        self._decided: OrderedDict[str, dict[int, dict[str, Any]]] = OrderedDict()
        #: the fsyncs run on a thread of their own: a record never waits behind the disk flushing the
        #: ones before it (one fsync covers every record written before it began)
        self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agy-harness-ledger-sync")
        self._sync_lock = threading.Lock()
        self._sync_queued = False
        self._writing = threading.Lock()  # held by whoever appends (the caller's thread or the writer)
        self._queued = 0  # records handed to the writer thread and not yet written

    def redact_command(self, text: str) -> str:
        """``text`` (a command line) as this ledger keeps it: its secret arguments masked, read as
        bash reads them (:mod:`agy_harness.adapters.policy.secrets`; the port's ``CommandRedactor``)."""
        from agy_harness.adapters.policy.secrets import redact_command  # (the grammar, loaded once needed)

        return redact_command(text)

    def command_secrets(self, text: str) -> list[str]:
        """The secret values of the command line ``text`` (masked in what it printed, too)."""
        from agy_harness.adapters.policy.secrets import command_secrets

        return command_secrets(text)

    async def record(self, entry: LedgerEntry) -> int:
        seq = self._append_at_once(entry.type, entry.body)
        if seq is not None:
            return seq
        return await asyncio.wrap_future(self._submit(entry))

    def record_now(self, entry: LedgerEntry) -> int:
        """The same as :meth:`record`, from a thread that may block (the benchmark, a test)."""
        return self._submit(entry).result()

    def _submit(self, entry: LedgerEntry) -> Future[int]:
        with self._sync_lock:
            self._queued += 1
        return self._pool.submit(self._append_queued, entry.type, entry.body)

    def _append_queued(self, kind: str, body: dict[str, Any]) -> int:
        try:
            with self._writing:
                seq = self._append(kind, body, wait=True)
                assert seq is not None
                return seq
        finally:
            with self._sync_lock:
                self._queued -= 1

    def _append_at_once(self, kind: str, body: dict[str, Any]) -> int | None:
        """The record appended on the caller's thread (the event loop) when that costs no wait: the
        files are open, no record is queued before it (the order stays the order given), and the
        lock -- this process's and the other writers' ``flock`` -- is free at once. Then it is a few
        system calls and one signature, ~0.1 ms; the hand-over to the writer thread cost far more
        (the thread waits for the GIL a busy loop holds: up to 5 ms at each system call). None: the
        writer thread appends it (a first record opens the files there; a held lock is waited for
        there, never on the loop)."""
        if self._fds is None or self._queued or not self._writing.acquire(blocking=False):
            return None
        try:
            return self._append(kind, body, wait=False)
        finally:
            self._writing.release()

    def close(self) -> None:
        self._pool.submit(lambda: None).result()  # every record queued is written
        self._syncer.submit(self._sync).result()  # and flushed
        self._syncer.shutdown(wait=True)
        self._pool.submit(self._close).result()
        self._pool.shutdown(wait=True)

    # -- the writer thread -------------------------------------------------------------------------

    def _close(self) -> None:
        if self._fds is not None:
            for fd in self._fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._fds = None

    def _open(self) -> tuple[int, int, int]:
        if self._fds is None:
            moved_once(self.directory)  # (an earlier version's ledger, from where it kept it)
            try:
                self._key, _ = load_keys(self.directory, create=True)
                self._key_id = C.key_id(self._key.public_key()) if self._key is not None else ""
                with open_dir(self.directory) as fd:
                    dir_fd = os.dup(fd)
                flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | FLAGS
                ledger = os.open(LEDGER, flags, 0o600, dir_fd=dir_fd)
                checkpoints = os.open(CHECKPOINTS, flags, 0o600, dir_fd=dir_fd)
            except OSError as exc:
                raise LedgerUnavailable(
                    f"the decision ledger at {self.directory} cannot be opened: {exc}"
                ) from exc
            for fd in (ledger, checkpoints):
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
                    raise LedgerUnavailable(
                        f"{self.directory}: a ledger file is not a private regular file of yours"
                    )
            self._fds = (dir_fd, ledger, checkpoints)
        return self._fds

    def _catch_up(self, fd: int) -> None:
        """Read what was appended since this writer last wrote (other sessions, or a start): the last
        record's sequence and hash, the decisions' gate ids; cut off a torn final line."""
        size = os.fstat(fd).st_size
        if size == self._size:
            return
        start = max(self._size if self._size < size else 0, size - TAIL_READ)
        data = os.pread(fd, size - start, start)
        end = data.rfind(b"\n")
        if end + 1 < len(data):  # a torn final line: the record a kill cut off, never acknowledged
            log.warning("decision ledger: cutting off a torn final line of %d bytes", len(data) - end - 1)
            os.ftruncate(fd, start + end + 1)
            size = start + end + 1
            data = data[: end + 1]
        first = 0 if start in (0, self._size) else data.find(b"\n") + 1  # skip a partial first line
        for raw in data[first:].split(b"\n"):
            if not raw:
                continue
            record, _broken = C.parse_record(raw)
            if record is None:
                self._seq += 1  # a damaged line: chained over all the same (verify names it)
                self._head = C.sha256_hex(raw)
                continue
            self._seq, self._head = int(record["seq"]), str(record.get("hash"))
            body = record.get("body")
            if isinstance(body, dict):
                self._remember(str(record.get("type")), self._seq, str(record.get("time", "")), body)
        self._size = size

    def _want_sync(self) -> None:
        """An fsync after what was just written, unless one is queued that has not begun (it covers it)."""
        with self._sync_lock:
            if self._sync_queued:
                return
            self._sync_queued = True
        try:
            self._syncer.submit(self._sync)
        except RuntimeError:  # (closing: close() flushes last)
            with self._sync_lock:
                self._sync_queued = False

    def _sync(self) -> None:
        """On the sync thread: fsync the ledger, then its checkpoints (one for a burst of records)."""
        with self._sync_lock:
            self._sync_queued = False  # a record written from now on queues the next one
            fds = self._fds
        if fds is None:
            return
        for fd in fds[1:]:
            try:
                os.fsync(fd)
            except OSError as exc:
                log.warning("decision ledger: fsync failed: %s", exc)

    def _remember(self, kind: str, seq: int, at: str, body: dict[str, Any]) -> None:
        """A record's part in what the ledger knows of a gate's decision: a decision is one agy may have
        taken; a delivery says agy took it (``taken: true``) or withdraws it (``taken: false``)."""
        gate_id = str(body.get("gate_id", ""))
        decision = body.get("decision")
        if kind == "delivery" and isinstance(decision, int):
            if body.get("taken") is False:
                self._decided.get(gate_id, {}).pop(decision, None)
            elif decision in self._decided.get(gate_id, {}):
                self._decided[gate_id][decision]["taken"] = True
        elif kind == "decision":
            who = {k: body.get(k) for k in ("decided_by", "verdict", "scope")}
            self._decided.setdefault(gate_id, {})[seq] = {**who, "at": at, "taken": None}
            self._decided.move_to_end(gate_id)
            while len(self._decided) > SEEN_KEPT:
                self._decided.popitem(last=False)

    async def decider(self, gate_id: str) -> dict[str, Any] | None:
        """Who made the decision this ledger holds for ``gate_id`` that agy may have taken (the newest;
        another session's, read from the file): ``decided_by``, ``verdict``, ``scope``, ``at`` and
        ``taken`` (True once a delivery record says agy took it; None while none does); None when it
        holds none."""
        return await asyncio.wrap_future(self._pool.submit(self._decider, gate_id))

    def _decider(self, gate_id: str) -> dict[str, Any] | None:
        with self._writing:  # (a record appended at once on the loop's thread changes what is read)
            dir_fd, ledger, _checkpoints = self._open()
            try:
                locked(dir_fd, ledger, fcntl.LOCK_EX)
            except OSError as exc:
                raise LedgerUnavailable(f"the decision ledger cannot be locked: {exc}") from exc
            try:
                self._catch_up(ledger)
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(ledger, fcntl.LOCK_UN)
            live = self._decided.get(gate_id)
            return dict(live[max(live)]) if live else None

    def _append(self, kind: str, body: dict[str, Any], *, wait: bool) -> int | None:
        """Append one record under the writers' lock (``wait``: for it; else None when it is held)."""
        dir_fd, ledger, checkpoints = self._open()
        try:
            if not locked(dir_fd, ledger, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB):
                return None
        except OSError as exc:
            raise LedgerUnavailable(f"the decision ledger cannot be locked: {exc}") from exc
        try:
            self._catch_up(ledger)
            if body.get("unless_decided") and self._decided.get(str(body.get("gate_id", ""))):
                return 0  # a decision agy may have taken is recorded (another session's): not agy's own
            body = {k: v for k, v in body.items() if k != "unless_decided"}
            at = now()
            line, digest, sig = C.sealed(self._seq + 1, self._head, at, kind, body, self._key)
            try:
                _write_all(ledger, line)  # in the file (a kill of this process no longer loses it)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(ledger, self._size)
                raise LedgerUnavailable(f"the decision ledger could not be written: {exc}") from exc
            self._seq, self._head, self._size = self._seq + 1, digest, self._size + len(line)
            self._remember(kind, self._seq, at, body)
            if self._key is not None:
                try:
                    _write_all(checkpoints, C.checkpoint(self._seq, digest, self._key, sig, self._key_id))
                except OSError as exc:  # the record stands; the next checkpoint covers it
                    log.warning("decision ledger: checkpoint not written: %s", exc)
            self._want_sync()  # (off the caller's path: the record is in the file already)
            return self._seq
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(ledger, fcntl.LOCK_UN)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


_SHARED: dict[Path, FileLedger] = {}


def shared_ledger(directory: Path | None = None) -> FileLedger:
    """This process's one :class:`FileLedger` for ``directory`` (default :func:`default_dir`): the
    sessions of a process (the board's, say) share its writer thread and files."""
    where = Path(os.path.abspath(directory if directory is not None else default_dir()))
    ledger = _SHARED.get(where)
    if ledger is None:
        ledger = _SHARED[where] = FileLedger(where)
    return ledger
