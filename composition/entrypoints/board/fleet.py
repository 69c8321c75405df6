"""Every agy language server of this user and every conversation on it, kept fresh cheaply.

Servers are found, and the adapters they are read through built, by the composition root
(:mod:`agy_harness.composition.root.servers`: the rules ``attach`` uses). Processes are scanned
again every ``scan_interval``.

Conversations come from each server's ``GetAllCascadeTrajectories`` (the directory the harness's
watcher reads), once a ``tick``. A conversation's steps are read (``GetCascadeTrajectorySteps``) and
digested (:func:`digest`: model, tokens, title, an open gate, a failure) only when its summary changed
and nobody follows it live, so 100 idle conversations cost one listing a tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, assert_never

from agy_harness.core.reconciler import Reconciler
from agy_harness.core.turns import UsageTotals
from agy_harness.ports.events import (
    AssistantMessage,
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
from agy_harness.ports.protocols import CascadeSummary

from ...root.servers import AgyServer, ServerFinder

log = logging.getLogger("agy_harness.board")

TITLE_CHARS = 90


@dataclass
class Digest:
    """What a conversation's steps say, for its row."""

    title: str = ""
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    waiting: int = 0  # gates open now
    failed: bool = False


def digest(cascade_id: str, steps: Sequence[Any]) -> Digest:
    """Read recorded steps as the harness would (the reconciler), keep what a row shows."""
    d = Digest()
    open_gates: set[str] = set()
    usage = UsageTotals()
    for event in Reconciler(cascade_id).feed_all(steps):
        match event:
            case UserMessage() if not d.title:
                d.title = " ".join(event.text.split())[:TITLE_CHARS]
            case Usage():
                usage.update(event)
            case ModelChanged():
                usage.model = event.model
            case GateOpened():
                open_gates.add(event.gate_id)
            case GateWithdrawn():
                open_gates.discard(event.gate_id)
            case StatusChanged():
                d.failed = event.status == "failed"
            case AssistantMessage() if event.is_error:
                d.failed = True
            case (
                UserMessage()
                | AssistantMessage()
                | ToolCall()
                | ToolResult()
                | TextDelta()
                | ReasoningDelta()
                | Rotation()
                | SubagentStarted()
                | Notice()
            ):
                pass
            case other:
                assert_never(other)
    d.tokens_in, d.tokens_out, d.model = usage.input, usage.output, usage.model
    d.waiting = len(open_gates)
    return d


def epoch(stamp: str) -> float:
    """agy's RFC 3339 time (``2026-12-03T06:00:00.123456789Z``) in seconds; 0 when unreadable."""
    if not stamp:
        return 0.0
    text = stamp.strip().replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # Python reads at most 6 fraction digits
        digits = "".join(c for c in rest if c.isdigit())
        text = f"{head}.{digits[:6] or '0'}{rest[len(digits) :]}"
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return 0.0


@dataclass
class Server:
    agy: AgyServer  # as the composition root built it
    failures: int = 0
    labels: dict[str, str] = field(default_factory=dict)  # model id -> agy's display name

    @property
    def port(self) -> int:
        return self.agy.port

    @property
    def pid(self) -> int | None:
        return self.agy.pid

    def label(self, model: str) -> str:
        return self.labels.get(model) or model

    @property
    def key(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Row:
    """One conversation on the board."""

    summary: CascadeSummary
    server: Server
    digest: Digest = field(default_factory=Digest)
    seen: tuple[str, int, str] = ("", -1, "")  # the summary fields a digest was read at

    @property
    def cascade_id(self) -> str:
        return self.summary.cascade_id

    @property
    def running(self) -> bool:
        return "RUNNING" in self.summary.status.upper()

    @property
    def last_activity(self) -> float:
        return epoch(self.summary.last_modified_time) or epoch(self.summary.last_user_input_time)


class Fleet:
    """The servers and rows; ``refresh()`` once a tick, ``changed`` called when anything moved."""

    def __init__(
        self,
        *,
        scanner: Any = None,
        pids: Sequence[int] | None = None,
        ports: Sequence[int] = (),
        scan_interval: float = 10.0,
        followed: Callable[[str], bool] = lambda cascade_id: False,
    ) -> None:
        self._finder = ServerFinder(scanner=scanner, pids=pids, ports=ports)
        self.scan_interval = scan_interval
        self.followed = followed
        self.servers: dict[int, Server] = {}
        self.rows: dict[str, Row] = {}
        self._scanned = -1e9
        self._reads = asyncio.Semaphore(4)

    # -- servers -----------------------------------------------------------------------------
    async def scan(self) -> None:
        """Find agy servers again (new ones are added; ones that stopped answering are dropped)."""
        self._scanned = time.monotonic()
        try:
            found = await self._finder.find(known=list(self.servers))
        except Exception as exc:  # a process vanishing mid-scan, /proc unreadable
            log.warning("board: process scan failed: %s", exc)
            return
        for agy in found:
            server = self.servers[agy.port] = Server(agy)
            with contextlib.suppress(Exception):  # display names are a nicety
                server.labels = {m.model: m.label for m in await agy.models.models() if m.label}
            log.info("board: agy on port %d (pid %s)", agy.port, agy.pid)

    async def _drop(self, server: Server) -> None:
        self.servers.pop(server.port, None)
        for cascade_id in [k for k, r in self.rows.items() if r.server is server]:
            del self.rows[cascade_id]
        await server.agy.close()
        log.info("board: agy on port %d is gone", server.port)

    # -- conversations -----------------------------------------------------------------------
    async def refresh(self) -> bool:
        """List every server's conversations (and scan for servers when due); True when a row changed."""
        if time.monotonic() - self._scanned >= self.scan_interval:
            await self.scan()
        results = await asyncio.gather(*(self._list(s) for s in list(self.servers.values())))
        return any(results)

    async def _list(self, server: Server) -> bool:
        try:
            summaries = await server.agy.directory.list_cascades()
        except Exception as exc:
            server.failures += 1
            log.debug("board: listing port %d failed (%s)", server.port, exc)
            if server.failures >= 3:
                await self._drop(server)
                return True
            return False
        server.failures = 0
        changed = False
        listed = set()
        reads = []
        for summary in summaries:
            listed.add(summary.cascade_id)
            row = self.rows.get(summary.cascade_id)
            if row is None:
                row = self.rows[summary.cascade_id] = Row(summary, server)
                changed = True
            elif row.summary != summary:
                row.summary = summary
                changed = True
            key = (summary.status, summary.step_count, summary.last_modified_time)
            if key != row.seen and not self.followed(summary.cascade_id):
                reads.append(self._digest(row, key))
        gone = [k for k, r in self.rows.items() if r.server is server and k not in listed]
        for cascade_id in gone:
            del self.rows[cascade_id]
        await asyncio.gather(*reads)
        return changed or bool(gone) or bool(reads)

    async def _digest(self, row: Row, key: tuple[str, int, str]) -> None:
        async with self._reads:
            try:
                steps = await row.server.agy.snapshot.read_steps(row.cascade_id)
            except Exception as exc:
                log.debug("board: reading %s failed (%s)", row.cascade_id, exc)
                return
        row.digest = await asyncio.to_thread(digest, row.cascade_id, steps)
        row.seen = key

    async def aclose(self) -> None:
        for server in list(self.servers.values()):
            await server.agy.close()
        self.servers.clear()
