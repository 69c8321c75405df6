"""The board: every conversation by state, the live sessions it follows, and who is told what.

A row's state: ``needs_you`` (a gate waits), ``working`` (a turn runs), ``failed`` (the last turn
failed), ``idle``. Rows come from the :class:`~.fleet.Fleet`; a conversation that runs or waits is
followed live (:class:`~.live.LiveSession`, so its gates reach the board as they open and can be
answered), as is one a page has open; a followed conversation that has been quiet for ``linger``
seconds with no page on it is let go again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import PurePosixPath
from typing import Any, assert_never
from urllib.parse import unquote, urlsplit

from agy_harness.adapters.sinks.escape import visible
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    ReasoningDelta,
    Rotation,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from agy_harness.ports.tasks import reap

from .cards import ask_line
from .fleet import Fleet, Row
from .live import LiveSession
from .notify import Notifier

log = logging.getLogger("agy_harness.board")

STATES = ("needs_you", "working", "failed", "idle")


def project_of(row: Row | None, gate: GateOpened | None = None) -> str:
    """The project a conversation works in, by its folder's name: agy's workspace, else the
    directory the gate's command runs in."""
    uris = row.summary.workspace_uris if row is not None else ()
    path = unquote(urlsplit(uris[0]).path) if uris else ""
    if not path and gate is not None and gate.permission is not None:
        path = gate.permission.cwd
    return PurePosixPath(path).name if path else ""


class Board:
    def __init__(
        self,
        fleet: Fleet,
        *,
        notifier: Notifier | None = None,
        tick: float = 0.5,
        linger: float = 30.0,
    ) -> None:
        self.fleet = fleet
        fleet.followed = self._followed
        self.notifier = notifier
        self.tick = tick
        self.linger = linger
        self.live: dict[str, LiveSession] = {}
        self._failed_at: dict[str, float] = {}
        # open gates the notifier was told about (a live session's replay opens them again), each to
        # its conversation: dropped when the gate is withdrawn or its conversation leaves the fleet
        self._notified: dict[str, str] = {}
        self._turns: set[str] = set()  # conversations seen running: their end is news
        self.version = 0
        self.snapshot_json = "{}"
        self._published = asyncio.Event()
        self._dirty = asyncio.Event()
        self.stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        await self.fleet.refresh()
        await self._follow()
        self._publish()
        self._tasks = [
            asyncio.create_task(self._refresh_loop(), name="agy-board-refresh"),
            asyncio.create_task(self._publish_loop(), name="agy-board-publish"),
        ]

    async def stop(self) -> None:
        self.stopping.set()
        self._wake_pages()
        for task in self._tasks:
            task.cancel()
        await reap(*self._tasks)
        await asyncio.gather(*(s.stop() for s in self.live.values()), return_exceptions=True)
        self.live.clear()
        if self.notifier is not None:
            await self.notifier.aclose()
        await self.fleet.aclose()

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self.tick)
            try:
                if await self.fleet.refresh():
                    self._dirty.set()
                if await self._follow():
                    self._dirty.set()
            except Exception:
                log.exception("board: refresh failed")

    async def _publish_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            self._publish()
            await asyncio.sleep(0.05)  # at most 20 board snapshots a second, however busy agy is

    def _publish(self) -> None:
        self.snapshot_json = json.dumps(self.snapshot(), ensure_ascii=False)
        self.version += 1
        self._wake_pages()

    def _wake_pages(self) -> None:
        self._published.set()
        self._published = asyncio.Event()

    async def changed(self, version: int) -> None:
        """Until the snapshot is newer than ``version`` (or the board stops)."""
        while self.version == version and not self.stopping.is_set():
            await self._published.wait()

    # -- following ---------------------------------------------------------------------------
    def root_of(self, cascade_id: str) -> str:
        row = self.fleet.rows.get(cascade_id)
        seen = {cascade_id}
        while row is not None and row.summary.parent_id and row.summary.parent_id not in seen:
            seen.add(row.summary.parent_id)
            cascade_id = row.summary.parent_id
            row = self.fleet.rows.get(cascade_id)
        return cascade_id

    def _followed(self, cascade_id: str) -> bool:
        live = self.live.get(self.root_of(cascade_id))
        return live is not None and live.alive

    def follow(self, cascade_id: str) -> LiveSession | None:
        """The live session of ``cascade_id``'s root conversation, started when needed."""
        root = self.root_of(cascade_id)
        live = self.live.get(root)
        if live is not None and (live.alive or time.monotonic() - self._failed_at.get(root, 0) < 5.0):
            return live
        row = self.fleet.rows.get(root)
        if row is None:
            return None
        live = LiveSession(
            row.server.port, root, csrf_token=row.server.agy.csrf_token, on_event=self._on_event
        )
        self.live[root] = live
        self._failed_at[root] = time.monotonic()
        live.start()
        return live

    async def _follow(self) -> bool:
        """Follow what runs or waits; let go of what has been quiet for ``linger`` s, unwatched."""
        changed = False
        for row in list(self.fleet.rows.values()):
            if row.running:
                self._turns.add(row.cascade_id)
            if (row.running or row.digest.waiting) and not self._followed(row.cascade_id):
                changed = self.follow(row.cascade_id) is not None or changed
        for gate_id, cascade_id in list(self._notified.items()):  # its conversation is gone
            if cascade_id not in self.fleet.rows:
                del self._notified[gate_id]
        now = time.time()
        quiet = []
        for root, live in list(self.live.items()):
            if live.subscribers or live.gates or self._running(live, root):
                continue
            if not live.alive or now - live.last_event > self.linger:
                quiet.append(self.live.pop(root))
        await asyncio.gather(*(live.stop() for live in quiet))
        return changed or bool(quiet)

    def _running(self, live: LiveSession, root: str) -> bool:
        row = self.fleet.rows.get(root)
        return (row is not None and row.running) or live.status.get(root) == "running"

    def _on_event(self, live: LiveSession, event: Event) -> None:
        """Notify every gate the board sees open, once, and the end of every turn it saw
        running (a live session's replay of old turns is history, not news)."""
        match event:
            case TextDelta() | ReasoningDelta() | ToolCall() | ToolResult() | Notice():
                return  # nothing a row or a card shows
            case (
                GateOpened()
                | GateWithdrawn()
                | StatusChanged()
                | UserMessage()
                | AssistantMessage()
                | Usage()
                | ModelChanged()
                | Rotation()
                | SubagentStarted()
            ):
                self._dirty.set()
            case other:
                assert_never(other)
        if self.notifier is None:
            return
        project = project_of(self.fleet.rows.get(self.root_of(event.cascade_id)), None)
        if isinstance(event, GateWithdrawn):
            self._notified.pop(event.gate_id, None)  # gone: the set holds only gates still open
        elif isinstance(event, GateOpened) and event.gate_id not in self._notified:
            self._notified[event.gate_id] = event.cascade_id
            self.notifier.notify(
                "gate",
                project or project_of(None, event),
                ask=ask_line(event),
                card=event.digest[:8],
                opens=(event.cascade_id, event.gate_id, event.digest),
            )
        elif isinstance(event, StatusChanged) and event.cascade_id in self._turns:
            if event.status == "idle":
                self._turns.discard(event.cascade_id)
                self.notifier.notify("turn", project)
            elif event.status == "failed":
                self._turns.discard(event.cascade_id)
                self.notifier.notify("failed", project, reason=event.reason or "the turn failed")

    # -- what pages see ----------------------------------------------------------------------
    def _row_view(self, row: Row) -> dict[str, Any]:
        live = self.live.get(self.root_of(row.cascade_id))
        live = live if live is not None and live.alive else None
        d = row.digest
        cid = row.cascade_id
        gates = [c for c in live.cards() if c["cascade_id"] == cid] if live else []
        status = live.status.get(cid, "") if live else ""
        if gates or (live is None and d.waiting):
            state = "needs_you"
        elif row.running or status == "running":
            state = "working"
        elif status == "failed" or (not status and d.failed):
            state = "failed"
        else:
            state = "idle"
        own = live is not None and cid == live.cascade_id
        tokens = live.tokens if own and live is not None and any(live.tokens) else (d.tokens_in, d.tokens_out)
        return {
            "cascade_id": cid,
            "parent_id": row.summary.parent_id,
            "port": row.server.port,
            "state": state,
            # agy's own title for the conversation where it gives one; else its first prompt
            "title": visible(row.summary.title)
            or (live.title if own and live is not None and live.title else d.title),
            "agy_title": visible(row.summary.title),
            "model": row.server.label(live.model if own and live is not None and live.model else d.model),
            "tokens_in": tokens[0],
            "tokens_out": tokens[1],
            "steps": row.summary.step_count,
            "last_activity": max(row.last_activity, live.last_event if own and live is not None else 0),
            "live": live is not None,
            "gates": len(gates) or (d.waiting if live is None else 0),
        }

    def snapshot(self) -> dict[str, Any]:
        rows = [self._row_view(r) for r in self.fleet.rows.values()]
        rows.sort(key=lambda r: (STATES.index(r["state"]), -r["last_activity"]))
        # a card names its conversation by agy's own title only: a first prompt can mislead about
        # what is asked now (the card's `ask` names the request itself)
        titles = {r["cascade_id"]: r["agy_title"] for r in rows}
        cards = []
        for live in self.live.values():
            if not live.alive:
                continue
            for card in live.cards():
                cards.append({**card, "title": titles.get(card["cascade_id"], "")})
        return {
            "servers": [{"port": s.port, "pid": s.pid} for s in self.fleet.servers.values()],
            "rows": rows,
            "cards": cards,
            "now": time.time(),
        }

    def session(self, cascade_id: str) -> LiveSession | None:
        """The live session a page opens for ``cascade_id`` (None: no such conversation)."""
        return self.follow(cascade_id) if cascade_id in self.fleet.rows else None
