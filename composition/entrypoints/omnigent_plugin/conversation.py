"""One omnigent conversation bound to one agy conversation: a started agy-harness session, its events
on a queue, its gates put to the current omnigent turn, its per-turn usage.

Turn boundaries: after our ``send`` the turn begins with the first ``user_message`` (agy's USER_INPUT
step for the text we sent) and ends with ``status idle`` once every message we sent into it (the turn
and any steering) has been seen and agy no longer lists the run RUNNING (the mapper's idle is agy's
final reply, after which agy may still work: a first turn's checkpoint; ``service/run_status.py``);
``status failed`` ends it with an error. Events before that first
``user_message`` belong to activity outside omnigent's turns (see :meth:`AgyConversation.outside`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import Any, Literal

from agy_harness.composition.root.container import AgyContainer, make_container
from agy_harness.composition.root.dependency_injection import providers
from agy_harness.composition.root.session import Session, session_from
from agy_harness.composition.service.run_status import RUN_RECHECK, listed_running
from agy_harness.ports.events import (
    Event,
    GateOpened,
    GateWithdrawn,
    ModelChanged,
    Notice,
    Rotation,
    StatusChanged,
    Usage,
    UserMessage,
)
from agy_harness.ports.protocols import ModelInfo

from .compat import ExecutorError, ExecutorEvent, TurnCancelled, TurnComplete
from .gates import TerminalOnlyCards
from .mirror import OutsideMirror
from .settings import AgySettings
from .sink import CardAsker, PluginSink
from .translate import TurnTranslator, UsageTotals, turn_usage

log = logging.getLogger("agy_harness.omnigent_plugin")

STEER_GRACE = 5.0  # after agy's idle, how long a steered message may take to start its turn
SUBAGENT_GRACE = 5.0  # after agy's idle, how long a quiet sub-agent may take to be listed / to finish


#: what an interrupt did: ended the turn (agy cancelled), kept it (agy still waits on a gate only its
#: terminal answers), or nothing (no turn runs, agy unreachable)
Interrupted = Literal["stopped", "held", "none"]


class ModelNotFound(LookupError):
    pass


def resolve_model(wanted: str, models: Sequence[ModelInfo]) -> ModelInfo:
    """``wanted`` (an agy model id or label, any case) in agy's catalog; raises ModelNotFound."""
    folded = " ".join(wanted.split()).casefold()
    for m in models:
        if m.model == wanted:
            return m
    for m in models:
        if folded in (m.model.casefold(), " ".join(m.label.split()).casefold()):
            return m
    known = ", ".join(f"{m.label or m.model} ({m.model})" for m in models) or "none"
    raise ModelNotFound(f"agy has no model {wanted!r}; its models: {known}")


class AgyConversation:
    def __init__(self, settings: AgySettings) -> None:
        self.settings = settings
        self.sink = PluginSink()
        self.usage = UsageTotals()
        self.session: Session | None = None
        self.interrupted = asyncio.Event()
        self.in_turn = False
        self.outside_events = 0
        self.mirror: OutsideMirror | None = None
        self._foreign = False  # the latest agy turn was typed outside omnigent (in agy's terminal)
        self._stack = AsyncExitStack()
        self._container: AgyContainer | None = None
        self._models: list[ModelInfo] | None = None
        self._pinned: str | None = None
        self._expected = 0
        self._interrupting = False
        self._cards = TerminalOnlyCards()

    # -- lifecycle ---------------------------------------------------------------------------------

    async def open(self) -> None:
        """Build the session from the composition root (``make_container`` + ``session_from``): our
        sink, and the RPC turn sender asking us for the model (omnigent's choice, else agy's own)."""
        s = self.settings
        kwargs: dict[str, Any] = {}
        try:
            if s.simulator:
                from agy_harness.adapters.simulator import Simulator

                sim = await self._stack.enter_async_context(Simulator(pace=s.sim_pace))
                kwargs.update(
                    port=sim.port, cascade_id=s.cascade_id or sim.cascade_id, version_text=sim.version
                )
            else:
                kwargs.update(
                    port=s.port,
                    base_url=s.base_url,
                    cascade_id=s.cascade_id,
                    pids=s.pids,
                    tmux_target=s.tmux_pane,
                )
            container = make_container(sink=self.sink, **kwargs)
            container.model_choice.override(providers.Object(lambda: self._pinned))
            self._container = container
            self.session = await self._stack.enter_async_context(session_from(container))
        except BaseException:
            await self._stack.aclose()
            raise
        await self._settle()
        while not self.sink.queue.empty():  # still history: tracked (usage), never mirrored
            self._track(self.sink.queue.get_nowait())
        self.sink.on_outside = self._between_turns
        self.sink.to_queue = False

    def _between_turns(self, event: Event) -> None:
        self._track(event)
        self.outside(event)

    async def _settle(self, quiet: float = 0.3, limit: float = 5.0) -> None:
        """Let the first read replay the conversation so far (history, not this turn's)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while loop.time() < end:
            try:
                async with asyncio.timeout(quiet):  # (wait_for can swallow a cancel on 3.11)
                    event = await self.sink.queue.get()
            except TimeoutError:
                return
            self._track(event)

    async def close(self) -> None:
        if self.mirror is not None:
            await self.mirror.close()
            self.mirror = None
        await self._stack.aclose()
        self.session = None

    def enable_mirror(self, server_url: str, session_id: str) -> None:
        """Post activity outside omnigent's turns into omnigent session ``session_id``, and park gates
        raised between its turns there at once (see mirror.py)."""
        if self.mirror is None and self._container is not None:
            self.mirror = OutsideMirror(server_url, session_id, self._container.model_catalog())
            self.sink.set_between(self.mirror.ask)

    # -- models ------------------------------------------------------------------------------------

    async def models(self) -> list[ModelInfo]:
        assert self._container is not None
        if self._models is None:
            self._models = await self._container.model_catalog().models()
        return self._models

    async def pin_model(self, wanted: str) -> ModelInfo:
        """Every turn we send from now on uses ``wanted`` (resolved against agy's catalog)."""
        info = resolve_model(wanted, await self.models())
        self._pinned = info.model
        return info

    async def model_label(self, model_id: str) -> str:
        if not model_id:
            return ""
        with contextlib.suppress(Exception):
            for m in await self.models():
                if m.model == model_id:
                    return m.label or model_id
        return model_id

    # -- events ------------------------------------------------------------------------------------

    def _track(self, event: Event) -> None:
        if isinstance(event, Usage):
            self.usage.update(event)
        elif isinstance(event, ModelChanged):
            self.usage.model = event.model

    def outside(self, event: Event) -> None:
        """Activity outside omnigent's turns (a turn typed in agy's terminal, its /clear, sub-agents).

        omnigent 0.19.1's executor interface can only speak inside a turn it started: a turn typed in
        agy and agy's /clear are posted to the omnigent session by the mirror when the harness process
        can reach omnigent's server, and logged (docs/omnigent.md, "Activity outside omnigent's turns"). What
        is left over from omnigent's own turns (the tail of a stopped reply) is not re-posted.
        """
        self.outside_events += 1
        bound = self.session.cascade_id if self.session is not None else event.cascade_id
        if isinstance(event, UserMessage) and event.cascade_id == bound:
            self._foreign = True
        if self.mirror is not None:
            self._gate_outside(event)
            if event.cascade_id in self.mirror.children or (
                event.cascade_id == bound and (self._foreign or isinstance(event, Rotation))
            ):
                self.mirror.post(event)
        if isinstance(event, UserMessage) and event.cascade_id == bound:
            log.info("agy turn outside omnigent (typed in agy): %.200s", event.text)
        elif isinstance(event, Rotation):
            log.info("agy /clear outside omnigent: %s -> %s", event.old_cascade_id, event.new_cascade_id)
        elif isinstance(event, Notice):
            log.log(logging.WARNING if event.level != "info" else logging.INFO, "agy-harness: %s", event.text)

    def _gate_outside(self, event: Event) -> None:
        """A gate only agy's terminal can answer, raised between omnigent's turns, is a card the mirror
        puts up; any gate agy stops waiting on is retired there (the turn's asker retires its own)."""
        assert self.mirror is not None
        if isinstance(event, GateOpened) and not event.answerable:
            self.mirror.show(event)
        elif isinstance(event, GateWithdrawn):
            self.mirror.withdrawn(event.gate_id)

    def _drain(self) -> None:
        while True:
            try:
                event = self.sink.queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            self._track(event)
            self.outside(event)

    async def _next(self, timeout: float | None = None) -> Event | None:
        """The next event; None when interrupted (or after ``timeout``)."""
        get = asyncio.ensure_future(self.sink.queue.get())
        stop = asyncio.ensure_future(self.interrupted.wait())
        try:
            await asyncio.wait({get, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not get.done():
                get.cancel()
        if get.done() and not get.cancelled():
            return get.result()
        return None

    # -- a turn ------------------------------------------------------------------------------------

    async def turn(self, text: str, asker: CardAsker) -> AsyncIterator[ExecutorEvent]:
        assert self.session is not None
        self.sink.to_queue = True
        self.interrupted.clear()
        before = self.usage.copy()
        self._expected, seen = 1, 0
        self.in_turn = True
        self.sink.set_asker(asker)
        try:
            try:
                await self.session.send(text)
            except Exception as exc:
                yield ExecutorError(
                    message=f"agy did not take the turn: {exc}", undelivered=True, preserve_session=True
                )
                return
            translator = TurnTranslator(self.session.cascade_id)
            idle_wait: float | None = None
            parent_idle = False
            ending = False  # agy replied, every message seen: the turn ends once agy lists the run idle
            while True:
                event = await self._next(idle_wait)
                if event is None:
                    if self.interrupted.is_set():
                        yield TurnCancelled(reason="user_cancelled")
                        return
                    if ending and await self._runs(translator.cascade_id):
                        idle_wait = RUN_RECHECK
                        continue
                    break  # agy's run is over, the steered message never started, or the sub-agent never showed up
                self._track(event)
                if isinstance(event, Rotation):
                    translator.cascade_id = event.new_cascade_id
                    continue
                if seen == 0:
                    if isinstance(event, UserMessage) and event.cascade_id == translator.cascade_id:
                        seen = 1
                        self._foreign = False
                    else:
                        self.outside(event)
                    continue
                if isinstance(event, UserMessage) and event.cascade_id == translator.cascade_id:
                    seen += 1
                    idle_wait, parent_idle, ending = None, False, False
                    continue
                if self.mirror is not None:  # what began between omnigent's turns goes on there
                    if isinstance(event, GateWithdrawn):
                        self.mirror.withdrawn(event.gate_id)
                    if event.cascade_id in self.mirror.children:
                        self.mirror.post(event)
                        continue
                self._cards.follow(event, asker)
                for out in translator.feed(event):
                    yield out
                if parent_idle and not translator.awaiting_subagents:
                    ending, idle_wait, parent_idle = True, 0, False  # (asks agy at once)
                    continue
                if translator.failed is not None:
                    yield ExecutorError(
                        message=f"agy: {translator.failed}",
                        preserve_session=True,
                        usage=turn_usage(before, self.usage, await self.model_label(self.usage.model)),
                    )
                    return
                if (
                    isinstance(event, StatusChanged)
                    and event.status == "idle"
                    and event.cascade_id == translator.cascade_id
                ):
                    if seen < self._expected:
                        idle_wait = STEER_GRACE
                    elif translator.awaiting_subagents:
                        parent_idle, idle_wait = True, SUBAGENT_GRACE
                    else:
                        ending, idle_wait = True, 0  # (asks agy at once)
                elif isinstance(event, StatusChanged) and event.status == "running" and ending:
                    ending, idle_wait = False, None  # agy went on: its next reply (or idle) ends the turn
            yield TurnComplete(
                response="".join(translator.text) or None,
                usage=turn_usage(before, self.usage, await self.model_label(self.usage.model)),
            )
        finally:
            await self._cards.retire_all()
            self.in_turn = False
            self.sink.set_asker(None)
            self.sink.to_queue = False
            self._drain()  # what came after the turn's end (the tail of a stopped reply)

    async def _runs(self, cascade_id: str) -> bool:
        """agy still lists ``cascade_id``'s run RUNNING (after its final reply: its checkpoint, say).
        Where agy does not say (no listing, not listed), the reply ended the turn, as before."""
        if self._container is None:
            return False
        return await listed_running(self._container.directory(), cascade_id) is True

    async def steer(self, text: str) -> bool:
        """A message typed into omnigent while a turn runs: agy queues it as the next turn."""
        if self.session is None or not self.in_turn:
            return False
        await self.session.send(text)
        self._expected += 1
        return True

    async def interrupt(self) -> Interrupted:
        """Stop: agy's cancel, and a parked gate is denied. Only while an omnigent turn runs.

        ``held``: agy still waits on a gate of this turn that only its terminal can answer (agy's
        cancel does not free a gate that waits, and no answer from here reaches this one): the turn
        is not over, so it is not ended (omnigent would show it interrupted while agy waits, and the
        next turn would queue behind the gate with no card); the gate's card is shown again saying
        why. omnigent's runner sends this interrupt before a Reject's verdict (``runner/app.py``)."""
        if self.session is None or not self.in_turn:
            return "none"
        if self.interrupted.is_set() or self._interrupting:
            return "stopped"
        self._interrupting = True
        try:  # deny the parked gate and cancel first, then end the omnigent turn
            report = await self.session.interrupt()
        finally:
            self._interrupting = False
            held = self._cards.waiting()
            if held:
                log.info(
                    "interrupt: agy still waits on a gate only its terminal can answer; the turn goes on"
                )
                self._cards.again()
            else:
                self.interrupted.set()
        if held:
            return "held"
        return "stopped" if report.cancelled else "none"
