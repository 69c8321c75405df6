"""The directory watcher: what agy's cascade list says about the bound conversation.

Every ``directory_interval`` it lists agy's cascades and acts on three things: the run-status
backstop (agy says IDLE while our turn is open: read everything, close the turn only if those steps
did not), sub-agents (a child cascade of ours is mirrored as its own event stream, polled, linked to
the parent's tool call), and rotation (a conversation minted after binding replaced ours: the
``rotate`` callback moves the whole harness). It never rotates back to a conversation it left.

What it costs while nothing can change (issue #14): the interval adapts. It is
``directory_interval`` while our turn runs, a sub-agent is mirrored, or something was just delivered;
each quiet check after that adds one interval, up to ``directory_idle_factor`` intervals (3 s by
default: the reference's rotation interval). A delivered user message or running edge (the stream
says a turn started) wakes it back to the short interval at once. Checks fall on clock ticks that
are multiples of the interval, so the sessions on one agy list together, and the RPC directory
shares one listing between them (``adapters/rpc/shared_listing.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agy_harness.core.reconciler import Reconciler
from agy_harness.core.rotation import is_child, on_screen, rotation_candidates
from agy_harness.core.steps import parse_step, tool_name, tool_output, user_text
from agy_harness.ports.events import Event, SubagentStarted, ToolResult
from agy_harness.ports.protocols import (
    CascadeDirectory,
    CascadeSummary,
    StepBatch,
    StepSnapshot,
    StepSource,
    TuiScreen,
)

from .conversation import Conversation, HarnessOptions
from .emitter import Emitter

SUBAGENT_RESULTS_KEPT = 32  # recent sub-agent results searched for a new child's id

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
    ) -> None:
        self.conversation = conversation
        self.snapshot = snapshot
        self.emitter = emitter
        self.rotate = rotate
        self.directory = directory
        self.options = options or HarnessOptions()
        self._loop: asyncio.Task[None] | None = None
        self._idle_reports = 0
        self._children: dict[str, asyncio.Task[None]] = {}
        self._child_state: dict[str, Reconciler] = {}  # a mirror's reconciler, kept across restarts
        self._child_idle: dict[str, int] = {}  # consecutive listings that show the child idle
        self._links: dict[str, str] = {}  # child -> the parent's call that started it
        self._known: set[str] | None = None  # cascades listed at bind time (see rotation_target)
        #: cascades other sessions of this library are bound to (composition.claims); never a /clear
        self.claimed: Callable[[], set[str]] | None = None
        self._ambiguous: tuple[str, ...] = ()
        self._claims_refused = False  # the notice that the claims location is unsafe was given
        #: agy's own terminal (its tmux pane), when known: a /clear of ours shows the input typed
        #: after it there; another client's new conversation does not (see _typed_here)
        self.screen: TuiScreen | None = None
        self._not_typed_here: set[str] = set()  # candidates already said to be another client's
        # (call_id, output) of the latest sub-agent tool calls: a child is listed soon after its call
        self._subagent_results: deque[tuple[str, str]] = deque(maxlen=SUBAGENT_RESULTS_KEPT)
        self._wake = asyncio.Event()  # something was delivered: back to the short interval
        self._delivered = asyncio.Event()  # the same, for a sub-agent mirror waiting for its link
        #: makes a live source for a sub-agent's cascade (the RPC stream); None: sub-agents are polled
        self.child_source: Callable[[], StepSource] | None = None
        self.checks = 0

    # -- lifecycle -------------------------------------------------------------------------

    async def bind(self) -> None:
        """Note what exists as we bind: other conversations, never a /clear."""
        if self.directory is None:
            return
        try:
            self._known = {c.cascade_id for c in await self.directory.list_cascades()} - {
                self.conversation.cascade_id
            }
        except Exception as exc:
            log.warning("cascade directory unavailable at start (%s); known at the first listing", exc)

    def start(self) -> None:
        if self.directory is not None and self.options.directory_interval > 0:
            self._loop = asyncio.create_task(self._directory_loop(), name="agy-harness-directory")

    def tasks(self) -> list[asyncio.Task[Any]]:
        """What the harness cancels on stop: the loop, then the sub-agent mirrors."""
        return [t for t in (self._loop, *self._children.values()) if t is not None]

    def left(self, old: str) -> None:
        """A rotation away from ``old``: stop its sub-agent mirrors, never rotate back to it."""
        for task in self._children.values():
            task.cancel()
        self._children.clear()
        self._subagent_results.clear()
        self._known = (self._known or set()) | {old}

    async def relayed(self, cascade_id: str, raw: Any) -> None:
        """A step of another conversation on ours: a mirrored sub-agent's goes to its own events at
        once (its mirror's reads are then the fallback); anything else is not ours and is dropped."""
        reconciler = self._child_state.get(cascade_id)
        if reconciler is None:
            log.debug(
                "a step of conversation %s arrived on ours; not ours, not mirrored: dropped", cascade_id
            )
            return
        await self.emitter.apply(StepBatch(cascade_id=cascade_id, steps=(raw,), source="relayed"), reconciler)

    def observe(self, events: Sequence[Event]) -> None:
        """Emitter observer: remember sub-agent tool results (they name the child cascade)."""
        for event in events:
            if isinstance(event, ToolResult) and "subagent" in event.name:
                self._subagent_results.append((event.call_id, event.output))
        if events and events[0].cascade_id == self.conversation.cascade_id:
            self._wake.set()
            self._delivered.set()

    # -- the loop --------------------------------------------------------------------------

    def _quiet(self, summaries: Sequence[CascadeSummary]) -> bool:
        """Nothing here can change unless agy starts something: no open turn, no sub-agent of ours running."""
        if self.conversation.reconciler.state.status == "running":
            return False
        cascade_id = self.conversation.cascade_id
        return not any(
            is_child(s) and cascade_id in (s.parent_id, s.root_id) and not s.status.endswith("IDLE")
            for s in summaries
        )

    async def _tick(self, interval: float) -> bool:
        """Sleep until the next multiple of ``interval`` on the loop clock; False when woken early."""
        loop = asyncio.get_running_loop()
        delay = interval - loop.time() % interval
        if self._wake.is_set():
            return False
        try:
            async with asyncio.timeout(delay):
                await self._wake.wait()
        except TimeoutError:
            return True
        return False

    async def _directory_loop(self) -> None:
        assert self.directory is not None
        base = self.options.directory_interval
        interval = base
        while True:
            if not await self._tick(interval):  # delivered events: check on the next short tick
                self._wake.clear()
                interval = base
                await self._tick(base)
            self._wake.clear()
            self.checks += 1
            try:
                summaries = await self.directory.list_cascades()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("cascade directory unavailable: %s", exc)
                continue
            cascade_id = self.conversation.cascade_id
            bound = next((s for s in summaries if s.cascade_id == cascade_id), None)
            if (
                bound is not None
                and bound.status.endswith("IDLE")
                and self.conversation.reconciler.state.status == "running"
            ):
                self._idle_reports += 1
                if self._idle_reports >= self.options.idle_reports_to_close:
                    self._idle_reports = 0
                    await self._backstop()
            else:
                self._idle_reports = 0
            cascade_id = self.conversation.cascade_id
            for s in summaries:
                if not (is_child(s) and cascade_id in (s.parent_id, s.root_id)):
                    continue
                task = self._children.get(s.cascade_id)
                if task is None or (task.done() and not s.status.endswith("IDLE")):  # new, or working again
                    self._child_idle[s.cascade_id] = 0
                    self._children[s.cascade_id] = asyncio.create_task(
                        self._mirror(s.cascade_id), name=f"agy-harness-subagent-{s.cascade_id}"
                    )
                elif not task.done():
                    await self._child_backstop(s, task)
            if self._known is None:  # the listing at start failed: take the first one that works
                self._known = {s.cascade_id for s in summaries} - {cascade_id}
            target = await self._rotation(cascade_id, summaries)
            if target is not None:
                await self.rotate(target)
            quiet = target is None and self._quiet(summaries) and self._idle_reports == 0
            interval = min(interval + base, base * self.options.directory_idle_factor) if quiet else base

    async def _link(self, child: str) -> str:
        """The parent's tool call that started ``child``: the one whose result names it.

        agy lists the child before that result reaches us, so while our turn runs this waits for
        it (each delivery re-checks), up to ``subagent_link_wait``; then, or when no turn runs, the
        latest sub-agent call is the best guess ("" when there is none).
        """
        loop = asyncio.get_running_loop()
        end = loop.time() + self.options.subagent_link_wait
        while True:
            named = next((c for c, output in reversed(self._subagent_results) if child in output), None)
            if named is not None:
                return named
            remaining = end - loop.time()
            if self.conversation.reconciler.state.status != "running" or remaining <= 0:
                return self._subagent_results[-1][0] if self._subagent_results else ""
            self._delivered.clear()
            try:
                async with asyncio.timeout(remaining):
                    await self._delivered.wait()
            except TimeoutError:
                pass

    async def _rotation(self, cascade_id: str, summaries: Sequence[CascadeSummary]) -> str | None:
        """Our terminal's ``/clear``, on positive evidence only (see the README's rotation rule):
        following is enabled, exactly one new root conversation with fresh user input appeared since
        binding, no other session of this library is bound to it, and (when agy's terminal is
        known) what was typed in it shows on that terminal's screen."""
        if not self.options.follow_clear:
            return None
        if not rotation_candidates(cascade_id, summaries, self._known or ()):
            return None  # nothing new to judge (the common case): no need to read anybody's claims
        # the claims are files of every session on this machine: read them off the loop
        try:
            claimed = await asyncio.to_thread(self.claimed) if self.claimed is not None else set()
        except OSError as exc:  # an unsafe claims directory: the other sessions' claims are unknown
            if not self._claims_refused:
                self._claims_refused = True
                await self.emitter.notice(
                    f"{cascade_id}/rotation/claims-unsafe",
                    f"not following a /clear: the other sessions' claims cannot be read safely ({exc})",
                    "warning",
                )
            return None
        candidates = rotation_candidates(cascade_id, summaries, self._known or (), claimed) or []
        if self.screen is not None and candidates:  # agy's terminal known: only what was typed there
            candidates = await self._typed_here(candidates)
        if len(candidates) > 1 and tuple(candidates) != self._ambiguous:
            self._ambiguous = tuple(candidates)
            await self.emitter.notice(
                f"{cascade_id}/rotation/ambiguous/{len(candidates)}",
                f"{len(candidates)} new conversations appeared on this agy ({', '.join(candidates)}); "
                "not following any of them as a /clear",
                "warning",
            )
        return candidates[0] if len(candidates) == 1 else None

    async def _typed_here(self, candidates: list[str]) -> list[str]:
        """With agy's terminal known: the candidates whose latest user input shows on its screen
        (typed in that terminal after its /clear). A conversation another client started on the
        same agy shows nowhere there: not followed, with a notice (it is checked again later)."""
        try:
            rows = await self.screen.screen() if self.screen is not None else []
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("rotation: cannot read agy's screen (%s); not following a /clear yet", exc)
            return []
        typed: list[str] = []
        for target in candidates:
            try:
                raws = await self.snapshot.read_steps(target)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("rotation: cannot read %s (%s); not following it yet", target, exc)
                continue
            steps = [st for st in map(parse_step, raws) if st is not None and st.type == "USER_INPUT"]
            if any(on_screen(user_text(st), rows) for st in steps[-3:]):
                typed.append(target)
            elif target not in self._not_typed_here:
                self._not_typed_here.add(target)
                await self.emitter.notice(
                    f"{self.conversation.cascade_id}/rotation/elsewhere/{target}",
                    f"a new conversation ({target}) appeared on this agy, but what was typed in it is not "
                    "on agy's screen: another client's, not this terminal's /clear; not following it",
                    "warning",
                )
        return typed

    async def _spawning_step(self, child: str) -> str | None:
        """The parent's sub-agent step that started ``child``, read from agy: the one whose result
        names it, else (while it still runs) the newest unfinished one no other child is linked to."""
        try:
            raws = await self.snapshot.read_steps(self.conversation.cascade_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            return None
        calls = [st for st in map(parse_step, raws) if st is not None and "subagent" in tool_name(st)]
        for st in reversed(calls):
            if st.settled and child in tool_output(st):
                return str(st.key)
        taken = set(self._links.values())
        running = [st for st in calls if not st.settled and str(st.key) not in taken]
        return str(running[-1].key) if running else None

    async def _child_backstop(self, summary: CascadeSummary, task: asyncio.Task[None]) -> None:
        """A sub-agent agy lists idle for ``idle_reports_to_close`` listings after it worked: read it
        once more, close its open turn (the per-child idle backstop) and end its mirror."""
        child = summary.cascade_id
        reconciler = self._child_state.get(child)
        if reconciler is None or not summary.status.endswith("IDLE") or summary.step_count == 0:
            self._child_idle[child] = 0
            return
        self._child_idle[child] = self._child_idle.get(child, 0) + 1
        if self._child_idle[child] < self.options.idle_reports_to_close:
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
            call_id = self._links[child] = await self._spawning_step(child) or await self._link(child)
            await self.emitter.emit(
                [
                    SubagentStarted(
                        id=f"{cascade_id}/subagent/{child}",
                        cascade_id=cascade_id,
                        child_cascade_id=child,
                        parent_call_id=call_id,
                    )
                ]
            )
        reconciler = self._child_state.setdefault(child, Reconciler(child))
        if self.child_source is not None:
            # streamed: each stream has its own connection now (adapters/rpc/client.py), so a child's
            # stream can neither stall the session's nor hold up a call; an idle one costs nothing
            source = self.child_source()
            try:
                async for batch in source.batches(child):
                    await self.emitter.apply(batch, reconciler)
                return  # agy ended the child's stream with a clean trailer: it is done
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("sub-agent %s: stream failed (%s); polling it", child, exc)
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
            await asyncio.sleep(self.options.subagent_poll)

    async def _backstop(self) -> None:
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
        events = self.conversation.reconciler.observe_idle()
        if events:
            await self.emitter.emit(events)
