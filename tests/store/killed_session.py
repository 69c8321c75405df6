"""A harness process for ``test_cursor_killed.py``, end to end: ``open_session`` (the public API, the
default adapters: discovery skipped, the stream, the emitter) on a simulator's conversation, with the
file cursor store, delivering to the same appending sink as ``killed_attach``. It exits once the
conversation's last step (``LAST``, a step key) was delivered. Its parent kills it with SIGKILL
mid-attach and runs it again.

    python -m tests.store.killed_session PORT CASCADE CURSOR_DIR SINK_FILE PAUSE LAST
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Event
from tests.store.killed_attach import FileSink


class LastSink(FileSink):
    def __init__(self, path: Path, pause: float, last: str) -> None:
        super().__init__(path, pause)
        self.last = last
        self.done = asyncio.Event()

    async def deliver(self, events: Sequence[Event]) -> int:
        accepted = await super().deliver(events)
        if any(e.step_key == self.last for e in events):
            self.done.set()
        return accepted


async def main(port: int, cascade: str, directory: Path, sink_file: Path, pause: float, last: str) -> None:
    store = FileCursorStore(directory)
    sink = LastSink(sink_file, pause, last)
    async with open_session(
        base_url=f"https://127.0.0.1:{port}", cascade_id=cascade, sink=sink, cursor_store=store
    ):
        await asyncio.wait_for(sink.done.wait(), 120)
    store.close()


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(int(a[0]), a[1], Path(a[2]), Path(a[3]), float(a[4]), a[5]))
