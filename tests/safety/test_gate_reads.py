"""How many times one gate reads agy's conversation (``GetCascadeTrajectorySteps``) when its request
is a 4 MiB command (agy repeats it in five fields: each read is a 20 MB answer to decode).

A gate's reads, each for a reason of its own: the check before the human is asked (answered
elsewhere meanwhile? not asked), the check at the moment of answering (the same WAITING step, the
same digest: never a cached copy) and, once agy reports the result, what the step ran -- read ONCE
for both readers of it, the check that it is what was approved and the ledger's ``outcome``
record (they each read it, at the same moment, before: 4 reads, now 3). The turn's model is read
too, before (an empty conversation). On the simulator, through a session with its file ledger and
a sink that asks; the directory watcher is off (its run-status backstop reads only when agy's
listing and the stream disagree: not counted here)."""

from __future__ import annotations

from pathlib import Path

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import FileLedger
from agy_harness.composition.service.conversation import HarnessOptions
from agy_harness.ports.events import Notice
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import FAST, harness_on
from tests.ledger.helpers import decisions, records

BIG = "x" * ((4 << 20) - 4096)  # under the 4 MiB cut: shown whole, allowable
SLOW = 300.0  # s: a safety net, not a deadline (tens of megabytes through the in-process simulator)
NO_DIRECTORY = HarnessOptions(**{**vars(FAST), "directory_interval": 0.0})
READS = "GetCascadeTrajectorySteps"


async def test_one_gate_on_a_4_mib_request_reads_the_conversation_three_times(
    sim: Simulator, tmp_path: Path
) -> None:
    command = f"echo {BIG}"
    sink = RecordingSink()
    async with harness_on(sim, sink, ledger=FileLedger(tmp_path / "ledger"), options=NO_DIRECTORY) as session:
        before = sim.calls.count(READS)
        await session.send(f"run `{command}`")
        await sink.wait_for(lambda: sink.asked, timeout=SLOW)
        [gate] = sink.asked
        assert gate.permission is not None and gate.permission.command_line == command  # whole, exactly
        asked = sim.calls.count(READS) - before
        assert asked == 2  # the turn's model (an empty conversation), the check before asking
        await sink.answers.put(GateAnswer(allow=True))
        await sink.wait_for(lambda: records(tmp_path / "ledger", "outcome"), timeout=SLOW)
        await session.harness.gates.decisions.drain()
        await sink.wait_for(lambda: not session.harness.gates.watch.tasks, timeout=SLOW)
        runs = session.harness.gates.runs
        assert runs.reads == 1  # what ran: one read, for the check and the record
        assert sim.calls.count(READS) - before == asked + 2  # the answer's target, what ran
    [outcome] = [r["body"] for r in records(tmp_path / "ledger", "outcome")]
    assert outcome["gate_id"] == gate.gate_id and outcome["ran_from"] == "step"
    assert outcome["error"] is False
    [decision] = decisions(tmp_path / "ledger")
    assert decision["verdict"] == "allow" and decision["request_digest"] == gate.digest
    assert not [e for e in sink.events if isinstance(e, Notice) and "ran" in e.id.rsplit("/", 1)[-1]]
    assert [c for c, _ in sim.executed] == [command]
