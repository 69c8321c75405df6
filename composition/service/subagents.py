"""Sub-agent mirrors: each child cascade of the bound conversation followed as its own event stream,
linked to the parent's tool call that started it.

The directory watcher hands every listing of agy's cascades to :meth:`SubagentMirrors.follow`: a new
child (or one working again) gets a mirror task; one agy lists idle for ``idle_reports_to_close``
listings after it worked is read once more, its open turn closed, and its mirror ends. A mirror
streams the child when the version gate chose a live source for sub-agents (``source``), and polls
it otherwise (or when that stream fails). A step of a mirrored child that arrives on the parent's
own stream (agy >= 1.1.1 relays them) goes straight to the child's events (the session bus's
foreign steps); one of a conversation nobody mirrors is not ours and is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence

from agy_harness.core.reconciler import Reconciler
from agy_harness.core.rotation import is_child
from agy_harness.core.steps import Step, parse_step, tool_name, tool_output
from agy_harness.core.subagents import SubagentSpec, named_children
from agy_harness.ports.events import Event, SubagentStarted, ToolResult
from agy_harness.ports.protocols import (
    CascadeSummary,
    RawStep,
    SessionClock,
    StepBatch,
    StepSnapshot,
    StepSource,
)

from .clock import LoopClock
from .conversation import Conversation, HarnessOptions
from .emitter import Emitter

SUBAGENT_RESULTS_KEPT = 32  # recent sub-agent results searched for a new child's id

log = logging.getLogger("agy_harness.harness")


class SubagentMirrors:
    def __init__(
        self,
        conversation: Conversation,
        *,
        snapshot: StepSnapshot,
        emitter: Emitter,
        options: HarnessOptions | None = None,
        clock: SessionClock | None = None,
        source: Callable[[], StepSource] | None = None,
    ) -> None:
        self.conversation = conversation
        self.snapshot = snapshot
        self.emitter = emitter
        self.options = options or HarnessOptions()
        self.clock = clock if clock is not None else LoopClock()
        #: makes a live source for a child's cascade (the version gate's choice); None: children are polled
        self.source = source
        self.children: dict[str, asyncio.Task[None]] = {}
        self.reconcilers: dict[str, Reconciler] = {}  # a mirror's reconciler, kept across restarts
        self._idle: dict[str, int] = {}  # consecutive listings that show the child idle
        self._links: dict[str, str] = {}  # child -> the parent's call that started it
        self.set_aside: set[str] = set()  # children whose start the sink refused: never read
        # (call_id, output) of the latest sub-agent tool calls: a child is listed soon after its call
        self._results: deque[tuple[str, str]] = deque(maxlen=SUBAGENT_RESULTS_KEPT)
        self._delivered = asyncio.Event()  # something of ours was delivered (a result may name a child)
        emitter.bus.on_delivered(self.observe)
        emitter.bus.on_foreign_step(self.relayed)

    # -- what the session tells it ---------------------------------------------------------------

    def observe(self, events: Sequence[Event]) -> None:
        """What the sink acknowledged: remember sub-agent tool results (they name the child cascade)."""
        for event in events:
            if isinstance(event, ToolResult) and "subagent" in event.name:
                self._results.append((event.call_id, event.output))
        if events and events[0].cascade_id == self.conversation.cascade_id:
            self._delivered.set()

    async def relayed(self, cascade_id: str, raw: RawStep) -> None:
        """A step of another conversation on ours: a mirrored sub-agent's goes to its own events at
        once (its mirror's reads are then the fallback); anything else is not ours and is dropped."""
        reconciler = self.reconcilers.get(cascade_id)
        if reconciler is None:
            log.debug(
                "a step of conversation %s arrived on ours; not ours, not mirrored: dropped", cascade_id
            )
            return
        await self.emitter.apply(StepBatch(cascade_id=cascade_id, steps=(raw,), source="relayed"), reconciler)

    def running(self, summaries: Sequence[CascadeSummary]) -> bool:
        """A child of ours that agy lists working."""
        cascade_id = self.conversation.cascade_id
        return any(
            is_child(s) and cascade_id in (s.parent_id, s.root_id) and not s.status.endswith("IDLE")
            for s in summaries
        )

    async def follow(self, summaries: Sequence[CascadeSummary]) -> None:
        """One listing: mirror each new child of ours (or one working again), close the idle ones."""
        cascade_id = self.conversation.cascade_id
        for s in summaries:
            if not (is_child(s) and cascade_id in (s.parent_id, s.root_id)):
                continue
            if s.cascade_id in self.set_aside:
                continue
            task = self.children.get(s.cascade_id)
            if task is None or (task.done() and not s.status.endswith("IDLE")):  # new, or working again
                self._idle[s.cascade_id] = 0
                self.children[s.cascade_id] = asyncio.create_task(
                    self._mirror(s.cascade_id), name=f"agy-harness-subagent-{s.cascade_id}"
                )
            elif not task.done():
                await self._backstop(s, task)

    def left(self) -> None:
        """A rotation away from the conversation: its mirrors stop."""
        for task in self.children.values():
            task.cancel()
        self.children.clear()
        self._results.clear()

    # -- linking a child to the call that started it ------------------------------------------------

    async def _link(self, child: str) -> str:
        """The parent's tool call that started ``child``: the one whose result names it.

        agy lists the child before that result reaches us, so while our turn runs this waits for
        it (each delivery re-checks), up to ``subagent_link_wait``; then, or when no turn runs, the
        latest sub-agent call is the best guess ("" when there is none).
        """
        end = self.clock.monotonic() + self.options.subagent_link_wait
        while True:
            named = next((c for c, output in reversed(self._results) if child in output), None)
            if named is not None:
                return named
            remaining = end - self.clock.monotonic()
            if self.conversation.reconciler.state.status != "running" or remaining <= 0:
                return self._results[-1][0] if self._results else ""
            self._delivered.clear()
            await self.clock.wait(self._delivered, remaining)

    async def _spawner(self, child: str) -> tuple[str, SubagentSpec]:
        """The parent's sub-agent step that started ``child`` and what it says of it (role, type),
        read from agy: the step that names it. agy names a child in its step as soon as the child
        exists, while the step still runs (the reference's ``_subagent_pairs``), so while a sub-agent
        step of ours runs without naming it, it is read again every ``subagent_poll`` up to
        ``subagent_link_wait``; then the newest such step, else the delivered results (:meth:`_link`),
        with no role or type."""
        end = self.clock.monotonic() + self.options.subagent_link_wait
        running: list[Step] = []
        while True:
            calls = await self._subagent_steps()
            for st in reversed(calls):
                spec = named_children(st).get(child)
                if spec is not None or (st.settled and child in tool_output(st)):
                    return str(st.key), spec or SubagentSpec()
            taken = set(self._links.values())
            running = [st for st in calls if not st.settled and str(st.key) not in taken]
            remaining = end - self.clock.monotonic()
            if not running or remaining <= 0:
                break
            await self.clock.sleep(min(remaining, self.options.subagent_poll))
        if running:
            return str(running[-1].key), SubagentSpec()
        return await self._link(child), SubagentSpec()

    async def _subagent_steps(self) -> list[Step]:
        """The parent's sub-agent steps, as agy has them now ([] when it cannot be read)."""
        try:
            raws = await self.snapshot.read_steps(self.conversation.cascade_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            return []
        return [st for st in map(parse_step, raws) if st is not None and "subagent" in tool_name(st)]

    # -- a child's events -----------------------------------------------------------------------

    async def _backstop(self, summary: CascadeSummary, task: asyncio.Task[None]) -> None:
        """A sub-agent agy lists idle for ``idle_reports_to_close`` listings after it worked: read it
        once more, close its open turn (the per-child idle backstop) and end its mirror."""
        child = summary.cascade_id
        reconciler = self.reconcilers.get(child)
        if reconciler is None or not summary.status.endswith("IDLE") or summary.step_count == 0:
            self._idle[child] = 0
            return
        self._idle[child] = self._idle.get(child, 0) + 1
        if self._idle[child] < self.options.idle_reports_to_close:
            return
        try:
            raws = await self.snapshot.read_steps(child)
            await self.emitter.apply(
                StepBatch(cascade_id=child, steps=tuple(raws), snapshot=True, source="subagent"), reconciler
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("sub-agent %s: final read failed (%s); keeping its mirror", child, exc)
            return
        events = reconciler.observe_idle("agy reports the sub-agent idle")
        if events:
            await self.emitter.emit(events)
        task.cancel()  # the mirror ends with the child; it restarts if agy lists it working again
        log.info("sub-agent %s finished; its mirror ends", child)

    async def _mirror(self, child: str) -> None:
        """A sub-agent's cascade, mirrored as its own event stream, linked to the parent's tool call."""
        cascade_id = self.conversation.cascade_id
        if child not in self._links:
            call_id, spec = await self._spawner(child)
            self._links[child] = call_id
            start = SubagentStarted(
                id=f"{cascade_id}/subagent/{child}",
                cascade_id=cascade_id,
                child_cascade_id=child,
                parent_call_id=call_id,
                role=spec.role,
                agent_type=spec.agent_type,
            )
            await self.emitter.emit([start])
            if start.id in self.emitter.stats.quarantined:  # the sink refused it: set aside, unread
                self.set_aside.add(child)
                log.warning("sub-agent %s: the event sink refused its start; it is not read", child)
                return
        reconciler = self.reconcilers.setdefault(child, Reconciler(child))
        if self.source is not None and await self._stream(child, reconciler):
            return  # agy ended the child's stream with a clean trailer: it is done
        while True:
            try:
                raws = await self.snapshot.read_steps(child)
                await self.emitter.apply(
                    StepBatch(cascade_id=child, steps=tuple(raws), snapshot=True, source="subagent"),
                    reconciler,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("sub-agent %s: read failed (%s); retrying", child, exc)
            await self.clock.sleep(self.options.subagent_poll)

    async def _stream(self, child: str, reconciler: Reconciler) -> bool:
        """Stream the child (each stream has its own connection, so a child's stream can neither stall
        the session's nor hold up a call; an idle one costs nothing). True: it ended cleanly; False:
        it failed (the mirror polls instead)."""
        assert self.source is not None
        try:
            async for batch in self.source().batches(child):
                await self.emitter.apply(batch, reconciler)
            return True
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("sub-agent %s: stream failed (%s); polling it", child, exc)
            return False
