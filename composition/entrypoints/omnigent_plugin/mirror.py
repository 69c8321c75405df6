"""Activity outside omnigent's turns, posted into the omnigent session through the omnigent sink.

omnigent's executor interface speaks only inside a turn omnigent started, but omnigent's server takes
external events for a session (``POST /v1/sessions/{id}/events``), which is what the omnigent sink
speaks. The harness process knows the server (``RUNNER_SERVER_URL``, inherited from omnigent's
runner) and the session (the conversation id of its turns), so a turn typed in agy's own terminal
(its user message, replies, tool calls and results), the sub-agents such a turn starts (each in its
child session, with its items and its end) and agy's ``/clear`` are posted there, in order,
idempotently (the sink's ``source_id`` is the event's deterministic id). Not mirrored: live deltas
(they would leave a preview no item retires), the session's status and usage (omnigent's runner owns
them; adding agy's SET totals would count tokens twice).

Gates raised between omnigent's turns are parked on the session's elicitation hook at once
(:meth:`OutsideMirror.ask`, the sink's hook path, without the session ``waiting`` status): omnigent's
web UI and its terminal chat show the card and answer it while no omnigent turn runs. A gate only
agy's terminal can answer is a card that says so (:meth:`OutsideMirror.show`), retired when agy moves
on (:meth:`OutsideMirror.withdrawn`).

A server that refuses (a remote server wanting credentials the runner does not pass to harness
processes) is logged once and mirroring stops; nothing else depends on it. A hook it refuses sends
gates back to the next omnigent turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agy_harness.adapters.sinks.omnigent import OmnigentSink
from agy_harness.adapters.sinks.omnigent.hook import OmnigentRejected
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    Rotation,
    StatusChanged,
    SubagentStarted,
    ToolCall,
    ToolResult,
    UserMessage,
)
from agy_harness.ports.protocols import GateAnswer, ModelCatalog
from agy_harness.ports.tasks import reap

log = logging.getLogger("agy_harness.omnigent_plugin")

MIRRORED = (UserMessage, AssistantMessage, ToolCall, ToolResult, Rotation, SubagentStarted)
CHILD_MIRRORED = (UserMessage, AssistantMessage, ToolCall, ToolResult, StatusChanged)  # a sub-agent's
GIVE_UP = 60.0  # seconds a delivery may keep failing before mirroring stops


class OutsideMirror:
    def __init__(self, base_url: str, session_id: str, model_catalog: ModelCatalog | None = None) -> None:
        self.sink = OmnigentSink(base_url, session_id, model_catalog=model_catalog, session_status=False)
        self.session_id = session_id
        self.posted = 0
        self.children: set[str] = set()  # sub-agents started outside omnigent's turns: mirrored too
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="agy-harness-outside-mirror")
        self._hook_refused = False
        self._retiring: set[asyncio.Task[None]] = set()

    def post(self, event: Event) -> None:
        """``event`` of a turn typed in agy, or of a sub-agent such a turn started."""
        if isinstance(event, SubagentStarted):
            self.children.add(event.child_cascade_id)
        if event.cascade_id in self.children:
            if isinstance(event, CHILD_MIRRORED):
                self._queue.put_nowait(event)
        elif isinstance(event, MIRRORED):
            self._queue.put_nowait(event)

    # -- gates between omnigent's turns -----------------------------------------------------------

    async def ask(self, gate: GateOpened) -> GateAnswer | None:
        """Park ``gate`` in the omnigent session now and return the human's answer; None when
        omnigent refuses the hook (then the gate waits for the next omnigent turn)."""
        if self._hook_refused:
            return None
        await self.drain()  # the turn's items (the tool call asking) come first
        try:
            return await self.sink.ask(gate)
        except OmnigentRejected as exc:
            self._hook_refused = True
            log.warning(
                "omnigent refused to park agy's gates between its turns (%s); they wait for its next turn",
                exc,
            )
            return None

    def show(self, gate: GateOpened) -> None:
        """A gate only agy's terminal can answer: a card that says so, until agy moves on."""
        if not self._hook_refused:
            self.sink.show(gate)

    def withdrawn(self, gate_id: str) -> None:
        """agy no longer waits on ``gate_id``: a card :meth:`show` put up is retired (an asked gate's
        card is retired when its ask is cancelled)."""
        if self.sink.showing(gate_id):
            task = asyncio.create_task(self.sink.withdraw(gate_id), name=f"agy-card-retire-{gate_id}")
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            pending = [await self._queue.get()]
            while not self._queue.empty():
                pending.append(self._queue.get_nowait())
            failing_since: float | None = None
            pause = 0.2
            while pending:
                try:
                    accepted = await self.sink.deliver(pending)
                except Exception as exc:
                    log.warning("mirroring to omnigent failed (%s: %s)", type(exc).__name__, exc)
                    accepted = 0
                self.posted += accepted
                pending = pending[accepted:]
                if not pending:
                    break
                failing_since = failing_since if failing_since is not None else loop.time()
                if loop.time() - failing_since > GIVE_UP:
                    log.error(
                        "omnigent session %s does not take mirrored events; activity outside omnigent's "
                        "turns is no longer mirrored (see omnigent's log)",
                        self.session_id,
                    )
                    return
                await asyncio.sleep(pause)
                pause = min(pause * 2, 5.0)

    async def drain(self, timeout: float = 5.0) -> None:
        """Let what is queued reach omnigent (bounded)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self._queue.empty() and not self._task.done():
                    await asyncio.sleep(0.05)

    async def close(self) -> None:
        await self.drain(2.0)
        self._task.cancel()
        await reap(self._task)
        if self._retiring:
            await asyncio.wait(set(self._retiring), timeout=5.0)
        await self.sink.aclose()  # and every card still up is retired
