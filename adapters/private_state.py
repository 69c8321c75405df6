"""Where the library keeps per-user state at run time, made so that no other local user can touch it.

The location: ``$XDG_RUNTIME_DIR/agy-harness`` when that directory is the user's own and private
(as the XDG spec has it: owned by the user, mode 0700), else ``agy-harness`` under the user's cache
directory (``$XDG_CACHE_HOME`` or ``~/.cache``). Never a predictable path in the shared temp directory:
another user could create it first, or plant a symlink there.

:func:`private_dir` creates a directory (mode 0700) and then checks what it got, without following a
symlink: it must be a real directory owned by the current user and closed to everybody else, and no
directory above it may let another user replace it (owned by the user or root, and not writable by
others unless sticky, like ``/tmp``). Anything else is refused with :class:`UnsafeStateError`, whose
message says what is wrong and how to fix it. Files in it are opened relative to its verified
descriptor (:func:`open_dir`), with ``O_NOFOLLOW`` and, for new files, ``O_EXCL``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from agy_harness.ports.errors import UnsafeState

ENV_STATE_DIR = "AGY_HARNESS_STATE_DIR"


#: A state location another local user could read, replace or write (the vocabulary's UnsafeState).
UnsafeStateError = UnsafeState


def _uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0


def _owner_ok(uid: int) -> bool:
    return uid in (_uid(), 0)


def _runtime_dir() -> Path | None:
    value = os.environ.get("XDG_RUNTIME_DIR")
    if not value or not os.path.isabs(value):
        return None
    try:
        info = os.lstat(value)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != _uid() or info.st_mode & 0o077:
        return None  # e.g. another user's, left in the environment by su: not ours to use
    return Path(value)


def state_root() -> Path:
    """The base of the library's per-user state (see the module doc); not created here.

    ``AGY_HARNESS_STATE_DIR`` overrides it (it is checked like any other location)."""
    override = os.environ.get(ENV_STATE_DIR)
    if override:
        return Path(override)
    runtime = _runtime_dir()
    if runtime is not None:
        return runtime / "agy-harness"
    cache = os.environ.get("XDG_CACHE_HOME")
    base = Path(cache) if cache and os.path.isabs(cache) else Path.home() / ".cache"
    return base / "agy-harness"


def durable_root() -> Path:
    """The base of the library's per-user state that must outlive a logout, a reboot and a cache
    clean-up (the decision ledger): ``$XDG_STATE_HOME/agy-harness`` (an absolute path, else
    ``~/.local/state/agy-harness``), as the XDG Base Directory spec puts "state data that should
    persist between (application) restarts" (``$XDG_RUNTIME_DIR`` is removed at logout, the cache may
    be deleted to reclaim space). ``AGY_HARNESS_STATE_DIR`` overrides it, as :func:`state_root`."""
    override = os.environ.get(ENV_STATE_DIR)
    if override:
        return Path(override)
    value = os.environ.get("XDG_STATE_HOME")
    base = Path(value) if value and os.path.isabs(value) else Path.home() / ".local" / "state"
    return base / "agy-harness"


def transient_roots() -> list[Path]:
    """Where :func:`state_root` is or was without an override: the runtime directory's place (when it
    is the user's own) and the cache's -- the places earlier versions kept the ledger in."""
    if os.environ.get(ENV_STATE_DIR):
        return []
    runtime = _runtime_dir()
    cache = os.environ.get("XDG_CACHE_HOME")
    base = Path(cache) if cache and os.path.isabs(cache) else Path.home() / ".cache"
    return ([runtime / "agy-harness"] if runtime is not None else []) + [base / "agy-harness"]


def _check_ancestors(path: Path) -> None:
    """No directory above ``path`` lets another user swap what lies below it."""
    for parent in reversed(path.parents):
        try:
            info = os.lstat(parent)
        except FileNotFoundError:
            return  # created below, by us
        except OSError as exc:
            raise UnsafeStateError(exc.errno or errno.EACCES, f"cannot check {parent}: {exc}") from None
        if stat.S_ISLNK(info.st_mode):
            if not _owner_ok(info.st_uid):
                raise UnsafeStateError(
                    errno.EPERM, f"{parent} is a symlink owned by uid {info.st_uid}; refusing state under it"
                )
            info = os.stat(parent)
        if not _owner_ok(info.st_uid):
            raise UnsafeStateError(
                errno.EPERM, f"{parent} is owned by uid {info.st_uid}; refusing state under it"
            )
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            raise UnsafeStateError(
                errno.EPERM,
                f"{parent} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                "refusing state under it",
            )


def _verify(fd: int, path: Path, *, strict: bool) -> None:
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeStateError(errno.ENOTDIR, f"{path} is not a directory")
    if info.st_uid != _uid():
        raise UnsafeStateError(
            errno.EPERM,
            f"{path} belongs to uid {info.st_uid}, not to you (uid {_uid()}); refusing to keep state "
            f"there: remove it, or set {ENV_STATE_DIR} to a directory of your own",
        )
    mask = 0o077 if strict else 0o022
    if info.st_mode & mask:
        raise UnsafeStateError(
            errno.EPERM,
            f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}); refusing to keep "
            f"state there: chmod 700 {path}",
        )


def _open_nofollow(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
            raise UnsafeStateError(
                errno.ELOOP, f"{path} is a symlink; refusing to follow it for private state: remove it"
            ) from None
        raise


def private_dir(path: Path, *, strict: bool = True) -> Path:
    """Create ``path`` (0700, parents as needed) if missing and verify it (see the module doc).

    ``strict``: closed to group and others (the library's own locations); otherwise only not
    writable by them (a directory the caller chose, e.g. a cursor store's). Raises UnsafeStateError."""
    path = Path(os.path.abspath(path))
    _check_ancestors(path)
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
    fd = _open_nofollow(path)
    try:
        _verify(fd, path, strict=strict)
    finally:
        os.close(fd)
    return path


@contextlib.contextmanager
def open_dir(path: Path, *, strict: bool = True) -> Iterator[int]:
    """A verified descriptor of ``path`` (:func:`private_dir`) for ``dir_fd=`` operations."""
    private_dir(path, strict=strict)
    fd = _open_nofollow(path)
    try:
        _verify(fd, path, strict=strict)  # the same directory that was checked, not a swapped one
        yield fd
    finally:
        os.close(fd)


def create_file(name: str, data: bytes, *, dir_fd: int) -> None:
    """A new file ``name`` (0600) in the directory ``dir_fd``; never follows or replaces anything."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def read_own_file(name: str, *, dir_fd: int, limit: int) -> bytes | None:
    """The content of ``name`` in ``dir_fd`` if it is a regular file of ours of at most ``limit``
    bytes (None otherwise); never follows a symlink."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != _uid() or info.st_size > limit:
            return None
        return os.read(fd, limit + 1)[:limit]
    finally:
        os.close(fd)
