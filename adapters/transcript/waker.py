"""What wakes the transcript tail: watchfiles on the transcript's directory, or a poll timer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from agy_harness.ports.tasks import reap

log = logging.getLogger("agy_harness.adapters.transcript.tail")


class Waker:
    """Wakes the tail when the transcript may have changed: watchfiles, or a poll timer.

    With watchfiles, it watches (non-recursively) the deepest existing directory on the way to the
    transcript, below ``stop_at``, and moves down as the directories appear; a watcher's first yield
    (it is in place) triggers one re-read, so nothing written while it was starting is missed.
    """

    def __init__(self, path: Path, *, stop_at: Path, poll_interval: float, use_watchfiles: bool) -> None:
        self.path = path
        self.stop_at = stop_at
        self.poll_interval = poll_interval
        self.safety_interval = max(2.0, poll_interval * 8)
        self._use_watch = use_watchfiles and _watchfiles_available()
        self._event = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watched: Path | None = None
        self._ready = False
        self.watch_wakeups = 0

    @property
    def watching(self) -> bool:
        return self._task is not None and not self._task.done() and self._ready

    async def wait(self) -> None:
        await self._retarget()
        timeout = self.safety_interval if self.watching else self.poll_interval
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # (wait_for can swallow a cancel on 3.11)
                await self._event.wait()
        self._event.clear()

    def _target(self) -> Path | None:
        directory = self.path.parent
        while True:
            if directory.is_dir():
                return directory
            if directory == self.stop_at or directory.parent == directory:
                return None
            directory = directory.parent

    async def _retarget(self) -> None:
        if not self._use_watch:
            return
        target = self._target()
        running = self._task is not None and not self._task.done()
        if running and target == self._watched:
            return
        await self._stop_watch()
        if target is None:
            return
        self._watched = target
        self._stop = asyncio.Event()
        child = self.path.relative_to(target).parts[0]
        self._task = asyncio.create_task(self._watch(target, child), name=f"transcript-watch:{target}")

    async def _watch(self, directory: Path, child: str) -> None:
        import watchfiles

        try:
            async for changes in watchfiles.awatch(
                directory,
                watch_filter=None,
                stop_event=self._stop,
                recursive=False,
                debounce=200,
                step=20,
                rust_timeout=max(20, min(200, int(self.poll_interval * 1000))),
                yield_on_timeout=True,
            ):
                if not self._ready:  # the first yield: the watcher is in place; re-read once
                    self._ready = True
                    self._event.set()
                # in the transcript's own directory any file may be it (transcript.jsonl or
                # transcript_full.jsonl); above it, only the next directory on the way matters
                if any(Path(p).name == child or directory == self.path.parent for _, p in changes):
                    self.watch_wakeups += 1
                    self._event.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("transcript %s: watchfiles stopped (%s); polling instead", self.path, exc)
        finally:
            self._ready = False

    async def _stop_watch(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        self._watched = None
        self._ready = False
        if task is not None:
            task.cancel()
            await reap(task)

    async def aclose(self) -> None:
        await self._stop_watch()


def _watchfiles_available() -> bool:
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        return False
    return True
