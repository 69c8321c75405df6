"""One ``GetAllCascadeTrajectories`` per language server at a time, shared by every session on it.

Every session's directory watcher lists agy's cascades (rotation, the run-status backstop,
sub-agents). With N sessions on one agy that was N identical calls, each parsed N times. Here the
sessions of one event loop that talk to the same base URL share one listing: a call that finds
one in flight awaits it instead of starting its own. The watchers wake on the same clock ticks
(``DirectoryWatcher`` aligns them), so N sessions cost one call a tick. A finished listing is never
handed out again: an answer from before a turn started would tell the run-status backstop "idle"
about a turn that is running.

Each caller gets its own list of the parsed, immutable ``CascadeSummary`` items. A failed listing
reaches every waiter, and the next tick retries.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from agy_harness.ports.protocols import CascadeSummary

Fetch = Callable[[], Awaitable[list[CascadeSummary]]]

# the listing in flight, per event loop (weakly: a closed loop's go with it), per base URL
_INFLIGHT: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[str, asyncio.Future[list[CascadeSummary]]]
] = weakref.WeakKeyDictionary()


async def shared_listing(key: str, fetch: Fetch) -> list[CascadeSummary]:
    """The listing for ``key`` (a base URL): the one in flight, or one fetched now."""
    inflight = _INFLIGHT.setdefault(asyncio.get_running_loop(), {})
    future = inflight.get(key)
    if future is None:
        future = inflight[key] = asyncio.ensure_future(fetch())
        future.add_done_callback(lambda done: _settle(inflight, key, done))
    # shielded: one caller being cancelled must not cancel the call the others wait for
    return list(await asyncio.shield(future))


def _settle(
    inflight: dict[str, asyncio.Future[list[CascadeSummary]]], key: str, done: asyncio.Future[Any]
) -> None:
    if inflight.get(key) is done:
        del inflight[key]
    if not done.cancelled():
        done.exception()  # retrieved, even when every waiter was cancelled
