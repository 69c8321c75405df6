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
        task = asyncio.create_task(ask, name=name)
        self._tasks.setdefault(gate_id, set()).add(task)
        try:
            return await task
        finally:
            tasks = self._tasks.get(gate_id)
            if tasks is not None:
                tasks.discard(task)
                if not tasks:
                    del self._tasks[gate_id]

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
