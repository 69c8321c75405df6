"""agy's own log names its port: discovery reads it before scanning sockets.

agy logs, in ``~/.gemini/antigravity-cli/cli.log`` or the ``--log-file`` path it was started with
(issue #13's evidence; the reference harness reads the same lines, omnigent 0.19.1 rpc.py
``_logged_rpc_ports``)::

    I1203 06:00:00.123456   4242 server.go:88] Starting language server process with pid 4242
    I1203 06:00:00.234567   4242 server.go:97] Language server listening on random port at 40123 for HTTPS (gRPC)
    I1203 06:00:00.234999   4242 server.go:98] Language server listening on random port at 40124 for HTTP

The HTTPS port is the connect-RPC one (the HTTP one is h2c gRPC, not used here). A shared log holds
many launches: a port counts for a process only when it follows the "Starting ... with pid N" line of
that process's pid, or, in a log without pid lines, when the log was written after the process
started. Only the user's own log files are read, and whatever they say is still verified (the
port's socket is the user's, and the ownership probe) before it is bound.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from .listeners import my_uid

log = logging.getLogger(__name__)

DEFAULT_LOGS: tuple[Path, ...] = (Path.home() / ".gemini" / "antigravity-cli" / "cli.log",)
_PREFIX = r"^[IWEF]\d{4} [\d:.]+\s+\d+ \S+:\d+\] "
_START = re.compile(_PREFIX + r"Starting language server process with pid (\d+)\s*$")
_HTTPS = re.compile(_PREFIX + r"Language server listening on random port at (\d+) for HTTPS\b")
_TAIL_BYTES = 1 << 20


def log_line_prefix(pid: int) -> str:
    """The glog-style prefix agy's lines carry (for writers: the simulator)."""
    import time

    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}"
    return f"I{stamp} {pid:>6} server.go:97] "


def log_file_from_cmdline(cmdline: Sequence[str]) -> Path | None:
    """The ``--log-file X`` / ``--log-file=X`` agy was started with."""
    path: str | None = None
    for i, arg in enumerate(cmdline):
        if arg == "--":
            break
        if arg == "--log-file" and i + 1 < len(cmdline):
            path = cmdline[i + 1]
        elif arg.startswith("--log-file="):
            path = arg.split("=", 1)[1]
    return Path(path) if path else None


def ports_in_log(text: str, pid: int, *, untagged_ok: bool) -> list[int]:
    """The HTTPS ports ``text`` announces for ``pid`` (the latest launch last). Lines after another
    pid's "Starting" line belong to that pid; lines before any "Starting" line count only when
    ``untagged_ok``."""
    owner: int | None = None
    ports: list[int] = []
    for line in text.splitlines():
        start = _START.match(line)
        if start:
            owner = int(start.group(1))
            continue
        https = _HTTPS.match(line)
        if https and (owner == pid or (owner is None and untagged_ok)):
            port = int(https.group(1))
            if 0 < port < 65536:
                ports.append(port)
    return ports


def logged_port(pid: int, cmdline: Sequence[str], *, started: float | None = None,
                logs: Sequence[Path] = DEFAULT_LOGS) -> int | None:  # fmt: skip
    """The connect-RPC port agy's log announces for process ``pid`` (the latest one), or None."""
    paths = [p for p in (log_file_from_cmdline(cmdline),) if p is not None] or list(logs)
    for path in paths:
        try:
            with open(path, "rb") as fh:
                info = os.fstat(fh.fileno())
                if info.st_uid != my_uid():  # another user's file names no port of ours
                    log.info("agy log %s belongs to uid %d, not to you; not read", path, info.st_uid)
                    continue
                fh.seek(max(0, info.st_size - _TAIL_BYTES))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        fresh = started is None or info.st_mtime >= started
        ports = ports_in_log(text, pid, untagged_ok=fresh)
        if ports:
            log.debug("agy log %s names port %d for pid %d", path, ports[-1], pid)
            return ports[-1]
    return None


def _started(pid: int) -> float | None:
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except Exception:
        return None


def logged_endpoints(
    procs: Iterable[tuple[int, Sequence[str]]], csrf_token: str | None = None
) -> list[tuple[int, int, str | None]]:
    """``(pid, port, csrf token)`` for each process (``(pid, cmdline)``) whose log announces its
    HTTPS port: candidates still to be verified."""
    seen: dict[int, tuple[int, int, str | None]] = {}
    for pid, cmdline in procs:
        port = logged_port(pid, cmdline, started=_started(pid))
        if port is not None and port not in seen:
            seen[port] = (pid, port, csrf_token_from_cmdline(cmdline) or csrf_token)
    return list(seen.values())


def csrf_token_from_cmdline(cmdline: Sequence[str]) -> str | None:
    """agy's ``--csrf_token`` from its command line (either ``--csrf_token X`` or ``--csrf_token=X``)."""
    for i, arg in enumerate(cmdline):
        if arg == "--csrf_token" and i + 1 < len(cmdline):
            return cmdline[i + 1]
        if arg.startswith("--csrf_token="):
            return arg.split("=", 1)[1]
    return None
