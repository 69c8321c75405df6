"""A coroutine's first step run at once, in the caller's task; a task only once it waits.

Python 3.11 has no eager tasks (3.12's ``eager_start``). :func:`start` runs ``coroutine`` until it
first waits, in a copy of the caller's context (as a task would run it). Finished by then, it needs
no task; else it goes on in a new task from where it waited.

The first step runs in the CALLER's task, so until it first waits it must not enter anything bound
to the current task (``asyncio.timeout``, an RPC call's or a sink's timeouts, anyio's cancel
scopes): that would stay bound to the caller once the coroutine moved on to its own task. A
coroutine started here hands off before such a wait with a bare ``await asyncio.sleep(0)`` (the
emitter's ``_handoff``): the rest, that wait included, runs in its own task.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any


def start(coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run ``coroutine``'s first step now; None when it finished, else the task it goes on in."""
    context = contextvars.copy_context()
    try:
        waiting = context.run(coroutine.send, None)
    except StopIteration:
        return None
    return asyncio.get_running_loop().create_task(_resume(coroutine, waiting), context=context)


async def _resume(coroutine: Coroutine[Any, Any, None], waiting: Any) -> None:
    await _Resumed(coroutine, waiting)


class _Resumed:
    """Awaiting it drives ``coroutine`` on from where it yielded ``waiting`` (what a task does with a
    coroutine it started itself): the task waits for ``waiting``, then sends into the coroutine, and
    passes on what the task throws in (its cancellation)."""

    __slots__ = ("_coroutine", "_waiting")

    def __init__(self, coroutine: Coroutine[Any, Any, None], waiting: Any) -> None:
        self._coroutine, self._waiting = coroutine, waiting

    def __await__(self) -> Generator[Any, None, None]:
        coroutine, waiting = self._coroutine, self._waiting
        while True:
            try:
                yield waiting
            except BaseException as exc:  # the task's cancellation: the coroutine's to handle
                try:
                    waiting = coroutine.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting = coroutine.send(None)
                except StopIteration:
                    return
