"""The read driver: which step source feeds the bound conversation, and keeping it fed.

The sources are tried in preference order (stream, then poll, then tail). A source that fails is
left for the next one for a backoff period, then the preferred one is tried again; one that says it
cannot serve this agy at all (:class:`~agy_harness.ports.errors.MethodMissing`) is dropped with one log line.
Every batch goes through the :class:`~.emitter.Emitter` (the reconciler dedups the stream's replay
after a reconnect and a poll after a stream). Nothing unexpected kills the driver: it logs, counts and
restarts with backoff. A rotation restarts it on the new cascade.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Sequence

from agy_harness.core.turns import turn_goes_on
from agy_harness.ports.errors import ConversationUnreadable, MethodMissing, SourceIdle
from agy_harness.ports.events import Notice
from agy_harness.ports.protocols import SessionClock, StepBatch, StepSource
from agy_harness.ports.tasks import reap

from .clock import LoopClock
from .conversation import Conversation, HarnessOptions, HarnessStats
from .emitter import Emitter

log = logging.getLogger("agy_harness.harness")


class ReadDriver:
    def __init__(
        self,
        conversation: Conversation,
        sources: Sequence[StepSource],
        emitter: Emitter,
        *,
        options: HarnessOptions | None = None,
        stats: HarnessStats | None = None,
        clock: SessionClock | None = None,
    ) -> None:
        if not sources:
            raise ValueError("a harness needs at least one step source")
        self.conversation = conversation
        self.sources = list(sources)
        self.emitter = emitter
        self.options = options or HarnessOptions()
        self.stats = stats or HarnessStats()
        self.clock = clock if clock is not None else LoopClock()
        self._idles = 0  # consecutive stream-idle restarts (logged as a warning once)
        self._unreadable: set[str] = set()  # conversations said to be unreadable (one notice each)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._supervise(), name="agy-harness-reader")

    async def restart(self) -> None:
        """Stop reading (the old cascade) and start again on the bound one."""
        if self.task is not None:
            self.task.cancel()
            await reap(self.task)
        self.start()

    async def _supervise(self) -> None:
        backoff = self.options.fallback_backoff
        while True:
            try:
                await self._read()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                self.stats.driver_restarts += 1
                log.exception(
                    "read driver failed (restart %d); restarting in %.1fs",
                    self.stats.driver_restarts,
                    backoff,
                )
                await self.clock.sleep(backoff)
                backoff = min(backoff * 2, self.options.max_backoff)

    async def _read(self) -> None:
        backoff = self.options.fallback_backoff
        index = 0
        while True:
            if not self.sources:
                cascade_id = self.conversation.cascade_id
                await self.emitter.emit(
                    [
                        Notice(
                            id=f"{cascade_id}/notice/no-source",
                            cascade_id=cascade_id,
                            level="error",
                            text="no step source can read this agy",
                        )
                    ]
                )
                return
            source = self.sources[min(index, len(self.sources) - 1)]
            fallback = source is not self.sources[0]
            self.stats.current_source = source.name
            try:
                if fallback:  # stay on the fallback for a while, then return to the preferred source
                    await self._consume(source, deadline=self.clock.monotonic() + backoff)
                else:
                    if await self._consume(source):
                        backoff = self.options.fallback_backoff
                    await self.clock.sleep(0.05)  # a clean end (trailer): re-open
                index = 0
            except MethodMissing as exc:
                self.sources.remove(source)
                self.stats.demotions.append(source.name)
                log.warning(
                    "step source %r cannot serve this agy (%s); demoted to %s",
                    source.name,
                    exc,
                    self.sources[0].name if self.sources else "nothing",
                )
                index = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.stats.source_errors += 1
                self._idles = self._idles + 1 if isinstance(exc, SourceIdle) else 0
                said = isinstance(exc, ConversationUnreadable) and not await self._say_unreadable(exc)
                (log.warning if self._idles <= 1 and not said else log.info)(  # said once
                    "step source %r failed (%s: %s); %s",
                    source.name,
                    type(exc).__name__,
                    exc,
                    f"retrying in {backoff:.1f}s"
                    if fallback or len(self.sources) == 1
                    else f"falling back to {self.sources[1].name!r} for {backoff:.1f}s",
                )
                if fallback or len(self.sources) == 1:
                    await self.clock.sleep(backoff)
                    index = 0
                else:
                    index = 1
                backoff = min(backoff * 2 + random.uniform(0, 0.1), self.options.max_backoff)

    async def _say_unreadable(self, exc: ConversationUnreadable) -> bool:
        """One notice per conversation that a source cannot read (issue #35 case 3), not an error on
        every poll; False when it was said already."""
        cascade_id = self.conversation.cascade_id
        if cascade_id in self._unreadable:
            return False
        self._unreadable.add(cascade_id)
        text = f"{exc}; what agy shows in its own terminal is not mirrored here while this lasts"
        await self.emitter.emit(
            [Notice(id=f"{cascade_id}/notice/unreadable", cascade_id=cascade_id, level="error", text=text)]
        )
        return True

    async def _say_unread(self, cascade_id: str, start: int, end: int) -> None:
        """One notice per run of steps a source could not read and went past (issue #35 case 3:
        thousands of finished steps over the size limit), before the steps that follow them."""
        said = f"{cascade_id}/notice/unread/{start}-{end}"
        if said in self._unreadable:
            return
        self._unreadable.add(said)
        steps = f"step {start}" if end - start == 1 else f"steps {start} to {end - 1}"
        text = (
            f"{steps} of this conversation cannot be read by polling (agy's answer for them is over the "
            f"size limit even with every string cut): what they hold is not shown here; the conversation "
            f"is followed from step {end} on"
        )
        await self.emitter.emit([Notice(id=said, cascade_id=cascade_id, level="error", text=text)])

    async def _consume(self, source: StepSource, deadline: float | None = None) -> int:
        """Apply batches until the source ends (or ``deadline``); the number of batches applied.

        The deadline only ever interrupts the wait for the next batch, never an event delivery.
        """
        cascade = self.conversation.cascade_id
        batches = source.batches(cascade)
        count = 0
        try:
            while True:
                if deadline is None:
                    batch = await anext(batches)
                else:
                    found = await self._next_before(batches, deadline)
                    if found is None:
                        return count
                    batch = found
                if cascade != self.conversation.cascade_id:
                    return count  # rotated away
                if batch.unread is not None:
                    await self._say_unread(cascade, *batch.unread)
                await self.emitter.apply(batch)
                count += 1
                if batch.run_idle and self.conversation.reconciler.state.status == "running":
                    await self._run_over(cascade)
        except StopAsyncIteration:
            return count
        finally:
            with contextlib.suppress(Exception):
                await batches.aclose()  # type: ignore[attr-defined]

    async def _run_over(self, cascade: str) -> None:
        """agy's stream says the run is over (IDLE and fully idle) while our turn is open: read
        everything agy has first (the stream may lag, and its fullyIdle be stale), and close the turn
        only if no gate is open and no step is unsettled (:func:`agy_harness.core.turns.turn_goes_on`,
        the rule the run-status backstop obeys)."""
        try:
            raws = await self.emitter.snapshot.read_steps(cascade)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("agy reports the run over: cannot read steps (%s); not closing on partial knowledge", exc)
            return
        await self.emitter.apply(StepBatch(cascade_id=cascade, steps=tuple(raws), snapshot=True, source="run-idle"))
        why = turn_goes_on(self.conversation.reconciler.state, raws)
        if why:
            log.info("agy reports the run over (idle, fully idle), but %s; the turn stays open", why)
            return
        events = self.conversation.reconciler.observe_idle("agy reports the run over (idle, fully idle)")
        if events:
            await self.emitter.emit(events)

    async def _next_before(self, batches: AsyncIterator[StepBatch], deadline: float) -> StepBatch | None:
        """The next batch, or None when ``deadline`` (on the clock) passes first: the wait for it is
        cancelled then (StopAsyncIteration when the source ended)."""
        remaining = deadline - self.clock.monotonic()
        if remaining <= 0:
            return None
        pending = asyncio.ensure_future(anext(batches))
        ready = asyncio.Event()
        pending.add_done_callback(lambda _: ready.set())
        try:
            if not await self.clock.wait(ready, remaining):
                return None
        finally:
            if not pending.done():
                pending.cancel()
                await reap(pending)
        return pending.result()
