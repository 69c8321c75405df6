"""The simulator's scripted model at work: :class:`Engine` runs one user turn on a cascade, building the
steps (see :mod:`.steps` / :mod:`.tool_steps`) and moving them through their statuses. What a turn does
is planned by :func:`.scenarios.plan_for`; the engine talks to the simulator only through
:class:`.state.EngineHost`.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from . import steps as st
from . import tool_steps as ts
from .code_review import ReviewActions
from .engine_tools import CHUNK_DELAY, STEP_DELAY, ToolActions
from .interactions import metadata_index, reask_copy
from .scenarios import (
    GREETING,
    LONG_TEXT,
    Plan,
    chunks,
    intent_of,
    plan_for,
    sentence,
)
from .state import Cascade, EngineHost, TurnCanceled

#: how long a polled agy's thought stays whole before its DONE step (the harness polls every 0.25 s)
POLL_WINDOW = 0.35


class Engine(ToolActions, ReviewActions):
    """Runs one user turn on a cascade: builds the steps and moves them through their statuses."""

    def __init__(
        self, sim: EngineHost, cascade: Cascade, text: str, model: str, execution_id: str, first: bool
    ):
        self.sim = sim
        self.c = cascade
        self.text = text
        self.model = model
        self.execution_id = execution_id
        self.first = first
        self.current: dict[str, Any] | None = None  # the step a cancel would end
        self.results: list[str] = []

    # -- plumbing ---------------------------------------------------------------------------
    def where(self, metadata_index: int | None = None) -> st.Where:
        mi = self.c.planner_calls if metadata_index is None else metadata_index
        return st.Where(self.c.id, self.c.trajectory_id, len(self.c.steps), mi, self.execution_id)

    def add(self, step: dict[str, Any]) -> int:
        return self.sim._append(self.c, step)

    def changed(self, index: int) -> None:
        self.sim._changed(self.c, index)

    async def pause(self, seconds: float) -> None:
        await self.sim._pause(self.c, seconds * self.sim.pace)

    def usage(self, thinking: str, response: str) -> dict[str, Any]:
        history = sum(len(str(s)) for s in self.c.steps) // 40
        first_call = self.c.planner_calls == 0
        return st.model_usage(
            self.model,
            input_tokens=900 + history + st.tokens(self.text),
            thinking=st.tokens(thinking),
            response=max(1, st.tokens(response)),
            cache_read=0 if first_call else 12000 + history,
            session_id=self.sim.session_id,
        )

    # -- planner calls ----------------------------------------------------------------------
    async def _think(self, step: dict[str, Any], index: int, thinking: str) -> None:
        """Stream the planner's thinking in a few growing snapshots."""
        grown = ""
        for piece in chunks(thinking, 3):
            await self.pause(CHUNK_DELAY)
            grown += piece
            st.planner_grow(step, thinking=grown, text="")
            self.changed(index)
        if thinking:
            await self.seen(index)

    async def seen(self, index: int, limit: float = 2.0) -> None:
        """Until the readers have step ``index`` as it is now (its whole thinking, which the DONE step
        drops): each open stream sent it, or, with no stream, reads went on for a poll interval
        (:data:`POLL_WINDOW`: other readers than the poller read steps too); at most ``limit`` seconds
        (a reader may be gone). Without any reader of this conversation, no wait. At pace 0 the
        thinking's snapshots and the DONE step coalesced in one frame, and a 1.0.4 poll (every 0.25 s)
        missed the thought's tail at any pace: readers showed "I …"."""

        c, reads = self.c, self.c.reads
        polling = reads and time.monotonic() - c.last_read < POLL_WINDOW * 4  # a poller read just now
        if not c.watchers and not polling:
            return  # (a reader that read once, long ago, is no poller: waiting on it stalled every turn)
        loop = asyncio.get_running_loop()
        start = loop.time()
        while loop.time() < start + limit:
            streams = [w for w in c.watchers if w.closed is None]
            if streams and not any(index in w.dirty for w in streams):
                return
            if not streams and c.reads > reads and loop.time() >= start + POLL_WINDOW:
                return
            await asyncio.sleep(0.01)
            if c.cancel.is_set():
                raise TurnCanceled

    async def planner_text(self, text: str, thinking: str, n_chunks: int = 6) -> None:
        step = st.planner(self.where(), self.model)
        index = self.add(step)
        self.current = step
        await self._think(step, index, thinking)
        said = ""
        for piece in chunks(text, n_chunks):
            await self.pause(CHUNK_DELAY)
            said += piece
            st.planner_grow(step, thinking="", text=said)
            self.changed(index)
        st.planner_done(step, self.usage(thinking, text), text=text)
        self.c.planner_calls += 1
        self.current = None
        self.changed(index)

    async def planner_tools(self, calls: list[dict[str, Any]], thinking: str) -> int:
        """A planner call that ends in tool calls; returns its metadataIndex (for the tool steps)."""
        step = st.planner(self.where(), self.model)
        index = self.add(step)
        self.current = step
        await self._think(step, index, thinking)
        # the model writes its tool calls after its thinking: the last thinking snapshot is served
        # before the DONE step, whose projection drops the thinking (a reader would miss its tail)
        await self.pause(CHUNK_DELAY)
        mi = self.c.planner_calls
        st.planner_done(step, self.usage(thinking, str(calls)), tool_calls=calls)
        self.c.planner_calls += 1
        self.current = None
        self.changed(index)
        return mi

    # -- the turn ---------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            if self.first:
                self.add(st.conversation_history(self.where(0)))
                await self.pause(STEP_DELAY)
            plan = plan_for(self.text)
            for action in plan.actions:
                await getattr(self, f"do_{action.kind}")(action)
            await self.final(plan)
            if self.first:
                await self.pause(STEP_DELAY)
                self.add(
                    st.checkpoint(
                        self.where(),
                        intent=intent_of(self.text),
                        requests=[self.text],
                        usage=st.model_usage(
                            "MODEL_PLACEHOLDER_M50",
                            input_tokens=35,
                            thinking=0,
                            response=3,
                            cache_read=0,
                            session_id=self.sim.session_id,
                        ),
                    )
                )
        except TurnCanceled:
            step = self.current
            if step is not None:
                index = self.c.steps.index(step)
                if step["status"] == st.GENERATING:
                    st.planner_cancel(step)
                else:
                    st.settle(step, st.CANCELED)
                self.changed(index)

    async def final(self, plan: Plan) -> None:
        if not plan.actions:
            if plan.long:
                text, n = LONG_TEXT, 60
            elif re.search(r"\bhello\b", self.text, re.I):
                text, n = GREETING, 6
            else:
                text, n = f"Here is my answer to “{self.text.strip()[:80]}”: done, nothing else is needed.", 6
            thinking = f"**Responding to the user**\n\nThe user wrote: {sentence(self.text.strip()[:60])} A direct reply will do."
        else:
            text = " ".join(self.results) or "Done."
            n = 5
            thinking = "**Summarising the results**\n\nAll the requested tools finished; I will report what happened."
        await self.pause(STEP_DELAY)
        await self.planner_text(text, thinking, n)

    # -- gates ------------------------------------------------------------------------------
    async def gate(
        self, step: dict[str, Any], request: dict[str, Any] | None, kind: str
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Ask ``request`` on ``step`` (already appended; ``None``: the request is nested in the step's
        own body, no ``requestedInteraction``); re-ask after timeouts. Returns the step that got the
        answer (or the last one) and the answer (``None``: gave up after the re-asks)."""
        reasks = 0
        while True:
            index = self.c.steps.index(step)
            if request is not None:
                ts.ask_gate(step, request)
            else:
                st.transition(step, st.WAITING)
            self.changed(index)
            answer = await self.sim._await_gate(self.c, index, kind)
            if answer is not None:
                return step, answer
            st.transition(step, st.ERROR)  # timed out (run_command_error.json)
            self.changed(index)
            if reasks >= self.sim.gate_reasks:
                return step, None
            reasks += 1
            await self.pause(STEP_DELAY)
            again = reask_copy(step, self.where(metadata_index(step)))
            self.add(again)
            step = again
