"""The tests' fakes of the ports that reach agy (see :mod:`tests.fakes`)."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agy_harness.ports.events import GateOpened
from agy_harness.ports.protocols import CascadeSummary, InteractionRejected, ModelInfo, StepBatch


class ScriptedSource:
    """Plays a script of items per opening: a list of steps (one batch), or an exception to raise.

    ``scripts`` is a list of scripts, one per ``batches()`` call; after the last one the source waits
    forever (a live, idle stream).
    """

    def __init__(self, name: str, scripts: list[list[Any]], live: bool = True) -> None:
        self.name = name
        self.live = live
        self.scripts = scripts
        self.opened = 0

    async def batches(self, cascade_id: str) -> AsyncIterator[StepBatch]:
        script = self.scripts[self.opened] if self.opened < len(self.scripts) else None
        self.opened += 1
        if script is None:
            await asyncio.Event().wait()
            return
        for item in script:
            if isinstance(item, BaseException):
                raise item
            if item == "wait":
                await asyncio.Event().wait()
            if item == "end":
                return
            await asyncio.sleep(0)
            yield StepBatch(cascade_id=cascade_id, steps=tuple(item), source=self.name)
        await asyncio.Event().wait()


class MemorySnapshot:
    """Answers ``read_steps`` with ``steps`` (a copy); the next ``fail_next`` reads, or every read
    while ``down`` is set, raise ConnectionError (agy unreachable)."""

    def __init__(self, steps: list[Any] | None = None, *, fail_next: int = 0, down: bool = False) -> None:
        self.steps = steps or []
        self.fail_next = fail_next
        self.down = down
        self.reads = 0

    async def read_steps(self, cascade_id: str) -> list[Any]:
        self.reads += 1
        if self.down or self.fail_next:
            self.fail_next = max(0, self.fail_next - 1)
            raise ConnectionError("agy is unreachable")
        return list(self.steps)


class MemorySnapshotFrom(MemorySnapshot):
    """A :class:`MemorySnapshot` that also reads from an index on (``StepSnapshotFrom``: agy's
    ``stepOffset``): the steps from ``offset`` on, a copy; counted and failing as ``read_steps`` does."""

    async def read_steps_from(self, cascade_id: str, offset: int) -> list[Any]:
        return (await self.read_steps(cascade_id))[max(0, offset) :]


class RecordingDelivery:
    """Records the interactions it takes; refuses with the queued ``reject`` errors first, and with
    ``down`` errors (transport failures) before those. ``on_deliver`` sees each call first (a test
    changes agy's steps as the answer arrives)."""

    def __init__(
        self,
        reject: list[InteractionRejected] | None = None,
        *,
        down: int = 0,
        on_deliver: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.delivered: list[dict[str, Any]] = []
        self.reject = reject or []
        self.down = down
        self.attempts = 0
        self.on_deliver = on_deliver

    async def deliver(self, cascade_id: str, interaction: dict[str, Any]) -> None:
        self.attempts += 1
        if self.on_deliver is not None:
            self.on_deliver(cascade_id, interaction)
        if self.down:
            self.down -= 1
            raise ConnectionError("agy is unreachable")
        if self.reject:
            raise self.reject.pop(0)
        self.delivered.append(interaction)


class RecordingSender:
    """A TurnSender: records (cascade, text), or raises ``fail``; ``log`` gets a line per turn."""

    def __init__(
        self, name: str = "fake", fail: Exception | None = None, log: list[str] | None = None
    ) -> None:
        self.name, self.fail, self.log = name, fail, log
        self.sent: list[tuple[str, str]] = []

    async def send(self, cascade_id: str, text: str) -> None:
        if self.fail is not None:
            raise self.fail
        self.sent.append((cascade_id, text))
        if self.log is not None:
            self.log.append(f"send {cascade_id}")

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.sent]


class RecordingInterrupter:
    """An Interrupter: counts its calls; ``log`` gets a line per call."""

    def __init__(self, log: list[str] | None = None) -> None:
        self.log = log
        self.interrupted: list[str] = []

    @property
    def calls(self) -> int:
        return len(self.interrupted)

    async def interrupt(self, cascade_id: str) -> None:
        self.interrupted.append(cascade_id)
        if self.log is not None:
            self.log.append(f"interrupt {cascade_id}")


class FixedCatalog:
    """A ModelCatalog answering ``models`` (or raising it, an exception); counts its calls."""

    def __init__(self, models: list[ModelInfo] | Exception) -> None:
        self._models = models
        self.calls = 0

    async def models(self) -> list[ModelInfo]:
        self.calls += 1
        if isinstance(self._models, Exception):
            raise self._models
        return list(self._models)


class ScriptedPane:
    """agy's pane (TuiKeys and TuiScreen): shows ``rows``; ``prompt_for`` names the gate whose prompt it
    shows (None: none); records the keys typed."""

    def __init__(self, rows: list[str] | None = None, prompt_for: str | None = None) -> None:
        self.rows = rows or []
        self.prompt_for = prompt_for
        self.typed: list[list[str]] = []

    async def shows_prompt(self, gate: GateOpened) -> bool:
        return gate.gate_id == self.prompt_for

    async def send_keys(self, keys: Sequence[str]) -> None:
        bad = [k for k in keys if not re.fullmatch(r"[0-9]{1,3}|Enter|Escape", k)]
        if bad:  # as agy's real pane: nothing but digits, Enter and Escape is ever typed
            raise ValueError(f"refusing to type {bad!r} into agy's pane (only digits, Enter, Escape)")
        self.typed.append(list(keys))
        if keys and keys[-1] in ("Enter", "Escape"):
            self.prompt_for = None  # the prompt took them

    async def screen(self) -> list[str]:
        return list(self.rows)


class ListedDirectory:
    """A cascade directory answering a scripted listing; counts listings, can fail."""

    def __init__(self, summaries: list[CascadeSummary]) -> None:
        self.summaries = summaries
        self.listings = 0
        self.fail_next = 0

    async def list_cascades(self) -> list[CascadeSummary]:
        self.listings += 1
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("agy is briefly unreachable")
        return list(self.summaries)


class NewCascades:
    """A CascadeStarter that mints a conversation id per start and lists each new conversation, idle,
    in ``directory`` (as agy's own directory then lists it)."""

    def __init__(self, directory: ListedDirectory | None = None) -> None:
        self.directory = directory
        self.started: list[str] = []

    async def start(self) -> str:
        cascade_id = str(uuid.uuid4())
        self.started.append(cascade_id)
        if self.directory is not None:
            self.directory.summaries.append(
                CascadeSummary(cascade_id=cascade_id, status="CASCADE_RUN_STATUS_IDLE")
            )
        return cascade_id
