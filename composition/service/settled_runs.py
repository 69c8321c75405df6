"""What a decided step ran, read once for everyone who asks (the gate bridge's :class:`SettledRuns`).

Two readers want the command line a step ran once agy reports its result: the check that what ran is
what was approved (:mod:`.gate_watch`) and the decision's ``outcome`` record (:mod:`.decisions`). Both
used to read agy's steps from that step on, each on its own, at the same moment: with a 4 MiB
command agy repeats in five fields, two 20 MB answers decoded for one gate.

Here one read serves both:

* asked while a read of the same step is in flight, a reader waits for that read (the same snapshot,
  taken at the same moment) -- unless that read was cancelled, then it reads itself;
* a step that has *settled* (DONE, ERROR, CANCELED: agy no longer changes it) keeps what it ran, so a
  later reader is told without a read (bounded: the last :data:`KEPT` steps). A step not settled, or
  not found, is never kept: the next reader reads again (fail closed: on doubt, read).

This is no freshness check of a request: an answer's target is always read anew
(:mod:`.gate_delivery`); only a settled step's ``runCommand.commandLine`` is remembered.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from agy_harness.core import steps as S
from agy_harness.ports.protocols import StepSnapshot, StepSnapshotFrom

KEPT = 256  # settled steps whose command line is remembered

Key = tuple[str, str, int]  # conversation, trajectory, step index


class _Abandoned(Exception):
    """The read a reader waited for was cancelled: it reads itself."""


def _settled_run(raws: list[Any], trajectory: str, index: int) -> tuple[bool, str | None]:
    """Whether ``raws`` hold the step, settled, and the command line it ran (None: no command line)."""
    for raw in raws:
        step = S.parse_step(raw)
        if step is None or (step.key.trajectory_id, step.key.step_index) != (trajectory, index):
            continue
        if not step.settled:
            return False, None
        line = S.as_dict(step.raw.get("runCommand")).get("commandLine")
        return True, line if isinstance(line, str) else None
    return False, None


class SettledRuns:
    def __init__(self, snapshot: StepSnapshot) -> None:
        self.snapshot = snapshot
        self.reads = 0  # reads of agy's steps made here (a test counts them)
        self._known: OrderedDict[Key, str | None] = OrderedDict()
        self._reading: dict[Key, asyncio.Future[str | None]] = {}

    async def ran(self, cascade_id: str, trajectory: str, index: int) -> str | None:
        """The command line step ``index`` of ``trajectory`` ran, once it settled (None: not settled,
        not there, or no command line). Raises what the read raised."""
        key = (cascade_id, trajectory, index)
        while True:
            if key in self._known:
                return self._known[key]
            pending = self._reading.get(key)
            if pending is None:
                break
            try:
                return await asyncio.shield(pending)  # (a waiter's cancel never cancels the read)
            except _Abandoned:
                continue
        done = asyncio.get_running_loop().create_future()
        self._reading[key] = done
        try:
            line = await self._read(key)
        except BaseException as exc:
            del self._reading[key]
            done.set_exception(_Abandoned() if isinstance(exc, asyncio.CancelledError) else exc)
            done.exception()  # (retrieved: nobody may be waiting)
            raise
        del self._reading[key]
        done.set_result(line)
        return line

    async def _read(self, key: Key) -> str | None:
        """Read from the step on where the snapshot can (a whole re-read of a large conversation held
        the loop), else, or when the step is not there (another trajectory's index) or not settled
        in that read, the whole conversation."""
        cascade_id, trajectory, index = key
        snapshot = self.snapshot
        settled, line = False, None
        if isinstance(snapshot, StepSnapshotFrom) and index > 0:
            self.reads += 1
            settled, line = _settled_run(await snapshot.read_steps_from(cascade_id, index), trajectory, index)
        if not settled:  # not there, or not settled yet: the whole conversation, read now
            self.reads += 1
            settled, line = _settled_run(await snapshot.read_steps(cascade_id), trajectory, index)
        if settled:
            self._known[key] = line
            while len(self._known) > KEPT:
                self._known.popitem(last=False)
        return line
