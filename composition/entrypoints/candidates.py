"""Which agy is which, when more than one answers (``attach`` refuses to guess): for each port its
process (pid and name), the directory it runs in and its most recent conversation's title, so the
user can pick the ``--port N`` they mean. Each look-up is bounded and may come back unknown (``?``).
Every name is shown by the display rule (:func:`agy_harness.core.display.one_line`): a directory or a
title holding control characters shows them as text, never sends them to the terminal."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence

import psutil

from agy_harness.core.display import one_line
from agy_harness.ports.errors import AgyAmbiguous

from .errors import UserFacingError

LOOKUP_SECONDS = 3.0


def _process(port: int) -> tuple[str, str]:
    """``("pid N (name)", directory)`` of the process of this user listening on loopback ``port``."""
    try:
        listening = [
            c
            for c in psutil.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid
        ]
    except (psutil.Error, OSError):
        return "pid ?", "?"
    for conn in listening:
        with contextlib.suppress(psutil.Error, OSError):
            proc = psutil.Process(conn.pid)
            directory = proc.cwd()
            home = os.path.expanduser("~")
            if directory == home or directory.startswith(home + os.sep):
                directory = "~" + directory[len(home) :]
            # named by whoever made them (a cloned repository's directory): shown by the display rule
            return f"pid {conn.pid} ({one_line(proc.name())})", one_line(directory)
    return "pid ?", "?"


async def _title(port: int) -> str:
    """The title of agy's most recent conversation on ``port`` ("" when unknown or untitled)."""
    from ..root.container import bind_endpoint, make_container, newest_root

    container = make_container(port=port)
    try:
        async with asyncio.timeout(LOOKUP_SECONDS):
            await bind_endpoint(container, version=False)
            summaries = await container.directory().list_cascades()
    except Exception:
        return ""
    finally:
        with contextlib.suppress(Exception):
            await container.client().aclose()
    newest = newest_root(summaries)
    return next((s.title for s in summaries if s.cascade_id == newest), "")


async def describe(ports: Sequence[int]) -> list[str]:
    """One line per port: ``port N · pid P (name) · directory · "title"``."""
    titles = await asyncio.gather(*(_title(p) for p in ports))
    lines = []
    for port, title in zip(ports, titles, strict=True):
        process, directory = await asyncio.to_thread(_process, port)
        shown = one_line(" ".join(title.split())[:60])  # agy's title: its control characters as text
        lines.append(f"port {port} · {process} · {directory}" + (f' · "{shown}"' if shown else ""))
    return lines


async def refusal(exc: AgyAmbiguous, command: str) -> UserFacingError:
    """The refusal for ``command`` naming every candidate, and the line that picks one."""
    ports = list(exc.ports)
    lines = await describe(ports) if ports else []
    listed = "".join(f"\n  {line}" for line in lines)
    pick = f"agy-harness {command} --port {ports[0]}" if ports else f"agy-harness {command} --port N"
    return UserFacingError(
        f"more than one agy answers ({len(ports) or 'several'}); pick one with --port, e.g. {pick}:{listed}"
    )


__all__ = ["describe", "refusal"]
