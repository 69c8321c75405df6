"""The host daemon ``omnigent run --server URL`` leaves behind in a client home, stopped after a test the
way omnigent 0.19.1's ``omnigent host stop --server URL`` stops it -- done here, not by starting that
command: a Python importing omnigent's CLI cost ~1.25 CPU-seconds a test (measured), the stop itself
a few HTTP requests and a signal.

What ``host stop`` does (omnigent/cli.py: ``host_stop`` -> ``_stop_daemon_sessions``,
``_terminate_daemon``), step for step: read the daemon's record (``<data dir>/daemons/*.json``: its pid,
host id); ask the server for its sessions and send each of this host's running or waiting
ones a ``stop_session`` event (``POST /v1/sessions/{id}/events``); SIGTERM the daemon -- only when the
pid still names the recorded daemon (a recycled pid is never signalled) -- wait up to 5 s for it to
exit, and remove the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx

ACTIVE = frozenset({"running", "waiting"})  # omnigent's _HOST_SESSION_ACTIVE_STATUSES
GRACE = 5.0  # omnigent's _HOST_DAEMON_STOP_GRACE_S


def daemon_records(home: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The daemon records in the client home ``home`` (``server_env``: its data dir is ``home/data``)."""
    found = []
    for path in sorted((home / "data" / "daemons").glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(path.read_text())
            if isinstance(record, dict) and isinstance(record.get("pid"), int):
                found.append((path, record))
    return found


def _alive(pid: int) -> bool:
    """``pid`` runs (not exited, nor exited and waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _is_the_daemon(record: dict[str, Any], home: Path) -> bool:
    """``record``'s pid still names that daemon: omnigent's host daemon entry point, for this home's data
    dir (a recycled pid is never signalled). omnigent checks the pid's creation time against the
    record's start time instead; here the clock that /proc's boot time derives from drifts (measured:
    a daemon "created" 15 s after the record it wrote), so its own command line and environment are
    the identity."""
    pid = record["pid"]
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return (
        _alive(pid)
        and b"omnigent.host._daemon_entry" in argv
        and f"OMNIGENT_DATA_DIR={home / 'data'}".encode() in environ
    )


async def stop_host(server: str, home: Path) -> None:
    """Stop the host daemon(s) ``omnigent run --server server`` started for ``home``, their sessions first."""
    records = daemon_records(home)
    if not records:
        return
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        rows: list[dict[str, Any]] = []
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            rows = (await http.get("/v1/sessions", params={"limit": 1000})).json()["data"]
        hosts = {r.get("host_id") for _, r in records if r.get("host_id")}
        for row in rows:
            if row.get("host_id") in hosts and row.get("status") in ACTIVE:
                with contextlib.suppress(httpx.HTTPError):
                    await http.post(
                        f"/v1/sessions/{row['id']}/events", json={"type": "stop_session", "data": {}}
                    )
    for path, record in records:
        pid = record["pid"]
        if _is_the_daemon(record, home):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            loop = asyncio.get_running_loop()
            end = loop.time() + GRACE
            while _alive(pid) and loop.time() < end:
                await asyncio.sleep(0.1)
        path.unlink(missing_ok=True)
