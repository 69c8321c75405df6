"""agy's own word on whether a conversation's run goes on: its entry in ``GetAllCascadeTrajectories``.

The mapper closes a turn on agy's final reply (a DONE planner with text and no tool calls: the
reference's ``_is_assistant_text_close_step``, docs/conventions.md). agy may still work after that
reply: on a conversation's first turn it writes a ``CHECKPOINT`` step (the title, from a model call of
its own) after the reply (recorded: ``checkpoint.json``, steps 0-3 of turn ``1df76a5f``; the simulator
does the same). A surface that says "the turn is over" asks agy first (:func:`listed_running`), so
that it says so only once agy lists the run idle.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from agy_harness.core.turns import RUN_IDLE, RUN_RUNNING
from agy_harness.ports.protocols import CascadeDirectory

log = logging.getLogger("agy_harness.harness")

LIST_TIMEOUT = 5.0  # one listing; agy that does not answer in time does not say


async def listed_running(
    directory: CascadeDirectory, cascade_id: str, timeout: float = LIST_TIMEOUT
) -> bool | None:
    """True: agy lists ``cascade_id``'s run RUNNING; False: IDLE; None: agy does not say (the listing
    failed or timed out, the conversation is not listed, or its status is another word)."""
    try:
        async with asyncio.timeout(timeout):
            summaries = await directory.list_cascades()
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # (TimeoutError included) a listing that fails says nothing
        log.debug("agy's run status of %s: cannot list (%s: %s)", cascade_id, type(exc).__name__, exc)
        return None
    entry = next((s for s in summaries if s.cascade_id == cascade_id), None)
    if entry is None:
        return None
    if entry.status == RUN_RUNNING:
        return True
    if entry.status == RUN_IDLE:
        return False
    return None


RUN_RECHECK = 0.1  # while agy lists the run RUNNING after its reply: how often to ask again


async def run_over(
    directory: CascadeDirectory,
    cascade_id: Callable[[], str],
    *,
    stop: Callable[[], bool] = lambda: False,
    every: float = RUN_RECHECK,
) -> None:
    """Until agy no longer lists the run of ``cascade_id()`` RUNNING (at once where it does not say),
    or ``stop()``; asks every ``every`` seconds."""
    while not stop() and await listed_running(directory, cascade_id()) is True:
        await asyncio.sleep(every)
