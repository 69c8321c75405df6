"""The one home of the tests' fakes: in-memory stand-ins for every port (the simulator covers the real
wire). Each fake of a port is held to that port's contract suite (tests/contracts/), like its adapters.
Import them from here (``from tests.fakes import ...``).

What reaches agy (:mod:`.agy`): StepSource: ScriptedSource · StepSnapshot: MemorySnapshot · StepSnapshotFrom: MemorySnapshotFrom ·
InteractionDelivery: RecordingDelivery · TurnSender: RecordingSender · Interrupter:
RecordingInterrupter · CascadeDirectory: ListedDirectory · CascadeStarter: NewCascades ·
ModelCatalog: FixedCatalog · TuiKeys / TuiScreen: ScriptedPane.

What a session keeps and shows (:mod:`.session`): EventSink: RecordingSink · Clock / SessionClock:
FakeClock (virtual time) · Claims: MemoryClaims · CursorStore: the adapters' MemoryCursorStore (with
ObservedCursorStore to watch its saves). RecordingEmitter stands in for the emitter behind a role
(with the session bus the roles subscribe to).
"""

from .agy import (
    FixedCatalog,
    ListedDirectory,
    MemorySnapshot,
    MemorySnapshotFrom,
    NewCascades,
    RecordingDelivery,
    RecordingInterrupter,
    RecordingSender,
    ScriptedPane,
    ScriptedSource,
)
from .session import FakeClock, MemoryClaims, ObservedCursorStore, RecordingEmitter, RecordingSink

__all__ = [
    "FakeClock",
    "FixedCatalog",
    "ListedDirectory",
    "MemoryClaims",
    "MemorySnapshot",
    "MemorySnapshotFrom",
    "NewCascades",
    "ObservedCursorStore",
    "RecordingDelivery",
    "RecordingEmitter",
    "RecordingInterrupter",
    "RecordingSender",
    "RecordingSink",
    "ScriptedPane",
    "ScriptedSource",
]
