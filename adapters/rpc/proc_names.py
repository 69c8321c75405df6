"""A cheap first look at a process during discovery's scan: could it be agy at all?

Discovery's scan (:class:`~.discovery.PsutilScanner`) decides with :func:`~.discovery.looks_like_agy`
on a process's name and command line, read through psutil (several ``/proc`` reads and objects per
process, about 0.15 ms each: 16 ms a scan on a quiet machine with a hundred processes, and a scan
runs at each attach, each re-bind after agy restarts). Every process that rule accepts has ``agy``
or ``language_server`` in its name or its command line (the simulator's module and command names
contain ``agy`` too), so a process whose ``/proc/<pid>/comm`` and ``cmdline`` hold neither, in any
case, is not read further. What cannot be read here, or is longer than is read, is not ruled out:
psutil reads it as before, and the same rule decides. (Linux ``/proc``; elsewhere nothing is ruled
out.)
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
#: what is read of one process's command line for the first look; a longer one is not ruled out
READ = 64 << 10
_WORDS = (b"agy", b"language_server")


def ruled_out(pid: int, proc: Path = PROC) -> bool:
    """True only when process ``pid`` certainly is not agy, its language server, or the simulator
    (neither word in its name or command line); False when it may be, or cannot be told."""
    seen = b""
    for name in ("comm", "cmdline"):
        data = _read(f"{proc}/{pid}/{name}")
        if data is None or len(data) > READ:
            return False
        seen += data.lower() + b"\0"
    return not any(word in seen for word in _WORDS)


def _read(path: str) -> bytes | None:
    """Up to READ + 1 bytes of ``path`` (None: unreadable). Plain ``os`` calls: a scan reads two small
    files of each process, and ``open()``'s buffered file object costs more than the reading."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= READ:
            chunk = os.read(fd, READ + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)
