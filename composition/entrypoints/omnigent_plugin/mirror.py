"""Activity outside omnigent's turns, posted into the omnigent session through the omnigent sink.

omnigent's executor interface speaks only inside a turn omnigent started, but omnigent's server takes
external events for a session (``POST /v1/sessions/{id}/events``), which is what the omnigent sink
speaks. The harness process knows the server (``RUNNER_SERVER_URL``, inherited from omnigent's
runner) and the session (the conversation id of its turns), so a turn typed in agy's own terminal
(its user message, replies, tool calls and results) and agy's ``/clear`` are posted there, in order,
idempotently (the sink's ``source_id`` is the event's deterministic id). Not mirrored: live deltas
(they would leave a preview no item retires), status and usage (omnigent's runner owns the session's
status and usage; adding agy's SET totals would count tokens twice), sub-agents of such a turn.

A server that refuses (a remote server wanting credentials the runner does not pass to harness
processes) is logged once and mirroring stops; nothing else depends on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agy_harness.adapters.sinks.omnigent import OmnigentSink
from agy_harness.ports.events import AssistantMessage, Event, Rotation, ToolCall, ToolResult, UserMessage
from agy_harness.ports.protocols import ModelCatalog
from agy_harness.ports.tasks import reap

log = logging.getLogger("agy_harness.omnigent_plugin")

MIRRORED = (UserMessage, AssistantMessage, ToolCall, ToolResult, Rotation)
GIVE_UP = 60.0  # seconds a delivery may keep failing before mirroring stops


class OutsideMirror:
    def __init__(self, base_url: str, session_id: str, model_catalog: ModelCatalog | None = None) -> None:
        self.sink = OmnigentSink(base_url, session_id, model_catalog=model_catalog)
        self.session_id = session_id
        self.posted = 0
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="agy-harness-outside-mirror")

    def post(self, event: Event) -> None:
        if isinstance(event, MIRRORED):
            self._queue.put_nowait(event)

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
        await self.sink.aclose()
