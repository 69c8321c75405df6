"""Waiting for cancelled tasks to end without swallowing our own cancel.

``task.cancel(); with suppress(BaseException): await task`` also swallows a cancel aimed at the task
that waits (a shutdown cancels every task at once), which then goes on as if nothing happened.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def reap(*tasks: asyncio.Future[Any]) -> None:
    """Wait until ``tasks`` have ended; their errors are consumed, a cancel of the caller propagates.
    The calling task itself, if among them, is not waited for (it cannot end while it waits)."""
    me = asyncio.current_task()
    others = [task for task in tasks if task is not me]
    if not others:
        return
    await asyncio.wait(others)
    for task in others:
        if not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" later
