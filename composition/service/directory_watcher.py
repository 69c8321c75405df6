"""The directory watcher: when to list agy's cascades, and what the bound conversation's own entry says.

Every ``directory_interval`` it lists agy's cascades and hands the listing to the three things that
read it: the run-status backstop (here: agy says IDLE while our turn is open -- read everything, close
the turn only if those steps did not), the sub-agent mirrors (:mod:`.subagents`) and the ``/clear``
rule (:mod:`.clear_follower`: a conversation of our terminal's minted after binding replaced ours,
and the ``rotate`` callback moves the whole harness).

What it costs while nothing can change (issue #14): the interval adapts. It is
``directory_interval`` while our turn runs, a sub-agent is mirrored, or something was just delivered;
each quiet check after that adds one interval, up to ``directory_idle_factor`` intervals (3 s by
default: the reference's rotation interval). A delivered user message or running edge (the stream
says a turn started) wakes it back to the short interval at once. Checks fall on clock ticks that
are multiples of the interval, so the sessions on one agy list together, and the RPC directory
shares one listing between them (``adapters/rpc/shared_listing.py``).

The backstop closes a turn only on fresh, settled evidence (issue #35 case 5: two IDLE listings from
before the turn, delayed by the network, closed a turn whose approval still waited):

* a listing asked for before the turn was open (or during another turn) does not count; nor does
  any listing for a turn without an id (its user input never seen): it cannot be told from another;
* a listing whose ``lastModifiedTime`` (and ``lastUserInputTime``) is older than the turn's own user
  input (its ``createdAt``, in the steps just read) is an answer from before the turn: it closes nothing;
* a turn with an open gate, or a step still WAITING, RUNNING, GENERATING or PENDING in the steps just read, is
  never closed, whatever agy lists.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from agy_harness.core.turns import turn_goes_on
from agy_harness.ports.events import Event
from agy_harness.ports.protocols import (
    CascadeDirectory,
    CascadeSummary,
    Claims,
    SessionClock,
    StepBatch,
    StepSnapshot,
    StepSource,
    TuiScreen,
)

from .clear_follower import ClearFollower
from .clock import LoopClock
from .conversation import Conversation, HarnessOptions
from .emitter import Emitter
from .subagents import SubagentMirrors

log = logging.getLogger("agy_harness.harness")


class DirectoryWatcher:
    def __init__(
        self,
        conversation: Conversation,
        *,
        snapshot: StepSnapshot,
        emitter: Emitter,
        rotate: Callable[[str], Awaitable[None]],
        directory: CascadeDirectory | None = None,
        options: HarnessOptions | None = None,
        clock: SessionClock | None = None,
        claims: Claims | None = None,
        screen: TuiScreen | None = None,
        subagent_source: Callable[[], StepSource] | None = None,
    ) -> None:
        self.conversation = conversation
        self.snapshot = snapshot
        self.emitter = emitter
        self.rotate = rotate
        self.directory = directory
        self.options = options or HarnessOptions()
        self.clock = clock if clock is not None else LoopClock()
        self.subagents = SubagentMirrors(
            conversation,
            snapshot=snapshot,
            emitter=emitter,
            options=self.options,
            clock=self.clock,
            source=subagent_source,
        )
        self.clear = ClearFollower(
            conversation,
            snapshot=snapshot,
            emitter=emitter,
            options=self.options,
            claims=claims,
            screen=screen,
        )
        self._loop: asyncio.Task[None] | None = None
        self._idle_reports = 0
        self._wake = asyncio.Event()  # something was delivered: back to the short interval
        self.checks = 0
        emitter.bus.on_delivered(self._delivered)

    # -- lifecycle -------------------------------------------------------------------------

    async def bind(self) -> None:
        """Note what exists as we bind: other conversations, never a /clear."""
        if self.directory is None:
            return
        try:
            self.clear.existing(c.cascade_id for c in await self.directory.list_cascades())
        except Exception as exc:
            log.warning("cascade directory unavailable at start (%s); known at the first listing", exc)

    def start(self) -> None:
        if self.directory is not None and self.options.directory_interval > 0:
            self._loop = asyncio.create_task(self._directory_loop(), name="agy-harness-directory")

    def tasks(self) -> list[asyncio.Task[Any]]:
        """What the harness cancels on stop: the loop, then the sub-agent mirrors."""
        return [t for t in (self._loop, *self.subagents.children.values()) if t is not None]

    def left(self, old: str) -> None:
        """A rotation away from ``old``: stop its sub-agent mirrors, never rotate back to it."""
        self.subagents.left()
        self.clear.left(old)

    def _delivered(self, events: Sequence[Event]) -> None:
        """What the sink acknowledged: anything of ours wakes the loop to the short interval."""
        if events and events[0].cascade_id == self.conversation.cascade_id:
            self._wake.set()

    # -- the loop --------------------------------------------------------------------------

    def _quiet(self, summaries: Sequence[CascadeSummary]) -> bool:
        """Nothing here can change unless agy starts something: no open turn, no sub-agent of ours running."""
        if self.conversation.reconciler.state.status == "running":
            return False
        return not self.subagents.running(summaries)

    async def _tick(self, interval: float, *, wakeable: bool = True) -> bool:
        """Sleep until the next multiple of ``interval`` on the clock; False when woken early (by a
        delivery; never when not ``wakeable``)."""
        delay = interval - self.clock.monotonic() % interval
        if delay < interval / 1000:  # on a tick already (or a float's rounding short of it): the next
            delay += interval
        if not wakeable:
            await self.clock.sleep(delay)
            self._wake.clear()
            return True
        if self._wake.is_set():
            return False
        return not await self.clock.wait(self._wake, delay)

    async def _directory_loop(self) -> None:
        assert self.directory is not None
        base = self.options.directory_interval
        interval = base
        while True:
            if not await self._tick(interval):  # delivered events: check on the next short tick
                interval = base
                await self._tick(base, wakeable=False)  # (not cut short by the next delivery)
            self._wake.clear()
            self.checks += 1
            turn = self._open_turn()  # what was open when this listing was asked for
            try:
                summaries = await self.directory.list_cascades()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("cascade directory unavailable: %s", exc)
                continue
            await self._status(summaries, turn)
            await self.subagents.follow(summaries)
            self.clear.existing(s.cascade_id for s in summaries)  # (when the listing at start failed)
            target = await self.clear.target(summaries)
            if target is not None:
                await self.rotate(target)
            quiet = target is None and self._quiet(summaries) and self._idle_reports == 0
            interval = min(interval + base, base * self.options.directory_idle_factor) if quiet else base

    # -- the run-status backstop -------------------------------------------------------------

    def _open_turn(self) -> str | None:
        """The open turn's key ('' for a turn without one), None when no turn is open."""
        state = self.conversation.reconciler.state
        return state.turn if state.status == "running" else None

    async def _status(self, summaries: Sequence[CascadeSummary], asked_during: str | None) -> None:
        """agy lists the bound conversation IDLE while our turn is open, ``idle_reports_to_close``
        times in a row, in listings asked for while that turn was open: the backstop. A turn without
        an id (its USER_INPUT never seen) is never closed by it: only agy's own steps end it."""
        cascade_id = self.conversation.cascade_id
        bound = next((s for s in summaries if s.cascade_id == cascade_id), None)
        turn = self._open_turn()
        # a turn without an id ('') never matches: two such turns ('' == '') cannot be told apart, and a
        # stale listing asked during the first would count for the second
        same_turn = bool(turn) and asked_during == turn
        if bound is not None and bound.status.endswith("IDLE") and same_turn:
            self._idle_reports += 1
            if self._idle_reports >= self.options.idle_reports_to_close:
                self._idle_reports = 0
                await self._backstop(bound)
        else:
            self._idle_reports = 0

    async def _backstop(self, bound: CascadeSummary | None = None) -> None:
        """agy says idle while our turn is open: first read everything agy has (the stream may lag
        behind, or be down), and close the turn only if those steps did not."""
        try:
            raws = await self.snapshot.read_steps(self.conversation.cascade_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("run-status backstop: cannot read steps (%s); not closing on partial knowledge", exc)
            return
        await self.emitter.apply(
            StepBatch(
                cascade_id=self.conversation.cascade_id, steps=tuple(raws), snapshot=True, source="backstop"
            )
        )
        why = self._turn_goes_on(raws, bound)
        if why:
            log.info("run-status backstop: agy lists the conversation idle, but %s; the turn stays open", why)
            return
        events = self.conversation.reconciler.observe_idle()
        if events:
            await self.emitter.emit(events)

    def _turn_goes_on(self, raws: Sequence[Any], bound: CascadeSummary | None) -> str:
        """Why the turn is not over although agy lists it idle ('' when nothing says so)."""
        why = turn_goes_on(self.conversation.reconciler.state, raws)  # the rule agy's fullyIdle obeys too
        if why:
            return why
        started = None
        for raw in raws:
            if not isinstance(raw, dict):
                continue
            kind = raw.get("type")
            if isinstance(kind, str) and kind.endswith("USER_INPUT"):
                metadata = raw.get("metadata")
                started = _instant(metadata.get("createdAt")) if isinstance(metadata, dict) else None
        if bound is not None and started is not None:
            listed = [_instant(t) for t in (bound.last_modified_time, bound.last_user_input_time)]
            known = [t for t in listed if t is not None]
            if known and max(known) < started:
                return "the listing is older than the turn's start"
        return ""


def _instant(value: object) -> datetime | None:
    """agy's RFC 3339 time (``2026-12-04T20:23:16.123456789Z``) as an aware datetime, or None."""
    if not isinstance(value, str) or not 20 <= len(value) <= 40:
        return None
    text = value.replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # at most microseconds (agy may send nanoseconds)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[: min(digits, 6)]}{rest[digits:]}"
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        return None
    return instant if instant.tzinfo is not None else None
