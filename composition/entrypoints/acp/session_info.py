"""``session_info_update``: agy's own title for the conversation, and its last activity.

agy names each conversation itself: ``GetAllCascadeTrajectories`` lists it with a ``summary`` (the
title) and a ``lastModifiedTime`` (docs/conventions.md). The harness lists agy's conversations
anyway (its directory watcher: rotation, the run-status backstop, sub-agents; every 0.5 s while a
turn runs, backing off to 3 s when idle). The session's directory is wrapped by a
:class:`SessionInfoFollower` that reads those listings as they pass, so the title costs no call of
its own, and sends ACP's ``session_info_update`` (``title``, ``updatedAt``):

* when the title changes (agy titles a conversation once its first turn ran);
* when the last activity moved and agy lists the conversation idle: once per turn (also one typed
  in agy's own terminal), not on every step while it runs;
* never before the client knows the session (the listing at bind time waits for :meth:`ready`).

After agy's ``/clear`` the conversation goes on in a new cascade (:meth:`moved`): its summary is the
one read. A title agy has not given is not sent (nothing is cleared). ``session/list`` shows the
same two fields.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from acp.schema import SessionInfoUpdate

from agy_harness.ports.protocols import CascadeDirectory, CascadeSummary

from .listing import title_of

log = logging.getLogger("agy_harness.acp.session_info")

Send = Callable[[SessionInfoUpdate], Awaitable[None]]


def info_update(summary: CascadeSummary) -> SessionInfoUpdate:
    return SessionInfoUpdate(
        session_update="session_info_update",
        title=title_of(summary),
        updated_at=summary.last_modified_time or None,
    )


class SessionInfoFollower:
    """A :class:`CascadeDirectory` (the harness's) that also sends the conversation's info on change."""

    def __init__(self, directory: CascadeDirectory, send: Send, cascade_id: str) -> None:
        self.directory = directory
        self.cascade_id = cascade_id  # where the conversation is now (agy's /clear moves it)
        self._send = send
        self._ready = False
        self._latest: CascadeSummary | None = None
        self._sent: tuple[str, str] = ("", "")

    async def list_cascades(self) -> list[CascadeSummary]:
        summaries = await self.directory.list_cascades()
        await self._seen(summaries)
        return summaries

    async def ready(self) -> None:
        """The client knows the session now: send what the listings showed so far."""
        self._ready = True
        if self._latest is not None:
            await self._maybe_send(self._latest)

    def moved(self, cascade_id: str) -> None:
        """agy's ``/clear``: the conversation goes on in ``cascade_id`` (read at the next listing)."""
        self.cascade_id = cascade_id

    async def _seen(self, summaries: Sequence[CascadeSummary]) -> None:
        summary = next((s for s in summaries if s.cascade_id == self.cascade_id), None)
        if summary is None:
            return
        self._latest = summary
        if self._ready:
            await self._maybe_send(summary)

    async def _maybe_send(self, summary: CascadeSummary) -> None:
        title, updated = summary.title, summary.last_modified_time
        titled = bool(title) and title != self._sent[0]
        idle = not summary.status.endswith("RUNNING")
        if not titled and not (idle and updated and updated != self._sent[1]):
            return
        self._sent = (title or self._sent[0], updated)
        try:
            await self._send(info_update(summary))
        except Exception as exc:  # the client is gone: the harness's listing goes on regardless
            log.debug("session %s: session_info_update not sent (%s)", self.cascade_id, exc)
