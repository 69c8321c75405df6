"""The asks a sink has in flight, per gate: run one as a task, cancel them all when the gate goes."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from agy_harness.ports.protocols import GateAnswer


class PendingAsks:
    def __init__(self) -> None:
        self._tasks: dict[str, set[asyncio.Task[GateAnswer]]] = {}

    async def run(self, gate_id: str, ask: Coroutine[Any, Any, GateAnswer], name: str) -> GateAnswer:
        """Await ``ask`` as a task that :meth:`cancel` can stop (a caller's cancel stops it too)."""
        return await self.start(gate_id, ask, name)

    def start(
        self, gate_id: str, ask: Coroutine[Any, Any, GateAnswer], name: str
    ) -> asyncio.Task[GateAnswer]:
        """``ask`` as a task :meth:`cancel` can stop, tracked until it ends."""
        task = asyncio.create_task(ask, name=name)
        self._tasks.setdefault(gate_id, set()).add(task)

        def forget(done: asyncio.Task[GateAnswer]) -> None:
            tasks = self._tasks.get(gate_id)
            if tasks is not None:
                tasks.discard(done)
                if not tasks:
                    del self._tasks[gate_id]

        task.add_done_callback(forget)
        return task

    def tasks(self, gate_id: str) -> set[asyncio.Task[GateAnswer]]:
        """The asks in flight for ``gate_id`` (left running)."""
        return set(self._tasks.get(gate_id, ()))

    def gate_ids(self) -> list[str]:
        return list(self._tasks)

    def cancel(self, gate_id: str) -> set[asyncio.Task[GateAnswer]]:
        """Cancel the asks for ``gate_id``; returns them (to await, if the caller wants)."""
        tasks = self._tasks.pop(gate_id, set())
        for task in tasks:
            task.cancel()
        return tasks

    def __len__(self) -> int:
        """How many gates have an ask in flight."""
        return len(self._tasks)

    def cancel_all(self) -> None:
        for gate_id in list(self._tasks):
            self.cancel(gate_id)
