"""One ``GetAllCascadeTrajectories`` per language server at a time, shared by every session on it.

Every session's directory watcher lists agy's cascades (rotation, the run-status backstop,
sub-agents). With N sessions on one agy that was N identical calls, each parsed N times. Here the
sessions of one event loop that talk to the same base URL share one listing: a call that finds
one in flight awaits it instead of starting its own. The watchers wake on the same clock ticks
(``DirectoryWatcher`` aligns them), so N sessions cost one call a tick. A finished listing is not
handed out again by default (``window=0``): an answer from before a turn started would tell the
run-status backstop "idle" about a turn that is running.

What is shared is the parsed, immutable ``CascadeSummary`` list (each caller gets its own list
object). A failed listing is not cached: every waiter sees the error, and the next tick retries.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agy_harness.ports.protocols import CascadeSummary

WINDOW = 0.0  # seconds a finished listing is handed out again: none (a stale listing misleads the backstop)

Fetch = Callable[[], Awaitable[list[CascadeSummary]]]


@dataclass
class _Entry:
    at: float = -1e18
    value: list[CascadeSummary] | None = None
    inflight: asyncio.Future[list[CascadeSummary]] | None = None


# per event loop (weakly: a closed loop's entries go with it), per base URL
_REGISTRY: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Entry]] = (
    weakref.WeakKeyDictionary()
)

calls = 0  # real listings made (benchmarks read it)


async def shared_listing(key: str, fetch: Fetch, *, window: float = WINDOW) -> list[CascadeSummary]:
    """The listing for ``key`` (a base URL): fresh enough, in flight, or fetched now."""
    global calls
    entries = _REGISTRY.setdefault(asyncio.get_running_loop(), {})
    entry = entries.setdefault(key, _Entry())
    if entry.inflight is None and entry.value is not None and time.monotonic() - entry.at <= window:
        return list(entry.value)
    if entry.inflight is None:
        calls += 1
        entry.inflight = asyncio.ensure_future(fetch())
        entry.inflight.add_done_callback(lambda f: _settle(entry, f))
    # shielded: one caller being cancelled must not cancel the call the others wait for
    return list(await asyncio.shield(entry.inflight))


def _settle(entry: _Entry, future: asyncio.Future[list[CascadeSummary]]) -> None:
    entry.inflight = None
    if not future.cancelled() and future.exception() is None:
        entry.value, entry.at = future.result(), time.monotonic()
