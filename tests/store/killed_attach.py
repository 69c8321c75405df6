"""A harness process for ``test_cursor_killed.py``: attaches to a long conversation (one snapshot batch
of ``steps`` recorded steps, renumbered) with the file cursor store, and delivers to a sink that
appends ``<step key> <event id>`` lines to a file, one ``write(2)`` per delivery, before it accepts.
Its parent kills it with SIGKILL mid-attach and runs it again.

    python -m tests.store.killed_attach CURSOR_DIR SINK_FILE STEPS PAUSE
"""

from __future__ import annotations

import asyncio
import copy
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.composition.service.conversation import Conversation
from agy_harness.composition.service.emitter import Emitter
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer, StepBatch
from tests.core.fixtures import CASCADE, fixture, names


def history(count: int) -> list[dict[str, Any]]:
    """``count`` settled recorded steps, renumbered so each is a step of its own."""
    settled = [s for s in (fixture(n) for n in names()) if s.get("status") != "CORTEX_STEP_STATUS_WAITING"]
    out = []
    for i in range(count):
        step = copy.deepcopy(settled[i % len(settled)])
        step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = i
        step["metadata"]["executionId"] = f"{step['metadata'].get('executionId', 'x')}-{i}"
        out.append(step)
    return out


class FileSink:
    def __init__(self, path: Path, pause: float) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.pause = pause

    async def deliver(self, events: Sequence[Event]) -> int:
        await asyncio.sleep(self.pause)
        os.write(self.fd, "".join(f"{e.step_key} {e.id}\n" for e in events).encode())
        return len(events)  # accepted: the consumer has them

    async def ask(self, gate: GateOpened) -> GateAnswer:
        raise AssertionError("a history has no open gate")

    async def withdraw(self, gate_id: str) -> None:
        pass


class NoSnapshot:
    async def read_steps(self, cascade_id: str) -> list[dict[str, Any]]:
        return []


async def main(directory: Path, sink_file: Path, steps: int, pause: float) -> None:
    store = FileCursorStore(directory)
    emitter = Emitter(
        Conversation(CASCADE, store),
        snapshot=NoSnapshot(),
        sink=FileSink(sink_file, pause),
        cursor_store=store,
    )
    batch = StepBatch(cascade_id=CASCADE, steps=tuple(history(steps)), snapshot=True, source="attach")
    await emitter.apply(batch)
    store.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
