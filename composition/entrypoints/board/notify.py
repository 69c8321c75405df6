"""The outbound webhook: an ntfy-style POST when a gate opens, a turn ends or a turn fails.

Off by default: nothing leaves the machine unless the user gives ``--webhook URL``. The body is the
message as plain text (what ntfy shows); ``Title``, ``Tags``, ``Priority`` headers as ntfy reads them,
and ``X-Agy-Event`` / ``X-Agy-Conversation`` for other receivers. The text is agy's, made visible and
cut short; no token or URL of the board is sent. Posts are queued (bounded) and sent one at a time
off the board's work; a failure is logged, never retried forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

import httpx

from agy_harness.adapters.sinks.escape import visible
from agy_harness.ports.tasks import reap

log = logging.getLogger("agy_harness.board")

KINDS = ("gate", "turn", "failed")
_HEADERS = {
    "gate": ("agy needs you", "warning", "high"),
    "turn": ("agy finished a turn", "white_check_mark", "default"),
    "failed": ("agy failed", "x", "high"),
}
MAX_TEXT = 300
QUEUE = 100


@dataclass(frozen=True)
class Note:
    kind: str
    cascade_id: str
    text: str


def _ascii(text: str) -> str:
    return text.encode("ascii", "replace").decode("ascii")


class Webhook:
    """POSTs :class:`Note`s to ``url`` for the ``kinds`` asked for."""

    def __init__(self, url: str, kinds: tuple[str, ...] = KINDS, *, timeout: float = 10.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"webhook URL must be http:// or https://, got {url!r}")
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown notification kind(s) {sorted(unknown)}; known: {', '.join(KINDS)}")
        self.url = url
        self.kinds = kinds
        self._timeout = timeout
        self._queue: asyncio.Queue[Note] = asyncio.Queue(QUEUE)
        self._task: asyncio.Task[None] | None = None
        self.sent = 0
        self.failed = 0

    def notify(self, kind: str, cascade_id: str, text: str) -> None:
        if kind not in self.kinds:
            return
        text = visible(" ".join(text.split()))
        if len(text) > MAX_TEXT:
            text = text[: MAX_TEXT - 1] + "…"
        try:
            self._queue.put_nowait(Note(kind, cascade_id, text))
        except asyncio.QueueFull:
            log.warning("board: webhook queue full; a %s notification is dropped", kind)
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._send_all(), name="agy-board-webhook")

    async def _send_all(self) -> None:
        async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client:
            while not self._queue.empty():
                note = self._queue.get_nowait()
                title, tags, priority = _HEADERS[note.kind]
                headers = {
                    "Title": title,
                    "Tags": tags,
                    "Priority": priority,
                    "Content-Type": "text/plain; charset=utf-8",
                    "X-Agy-Event": note.kind,
                    "X-Agy-Conversation": _ascii(note.cascade_id),
                }
                try:
                    response = await client.post(self.url, content=note.text.encode("utf-8"), headers=headers)
                    response.raise_for_status()
                    self.sent += 1
                except httpx.HTTPError as exc:
                    self.failed += 1
                    log.warning("board: webhook %s failed: %s", self.url, exc)

    async def aclose(self) -> None:
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    await asyncio.shield(self._task)
            self._task.cancel()
            await reap(self._task)
