"""``agy-harness record``: a live session's frames and snapshots to JSONL; ``replay`` reads it and gives
the same committed events as the live session; ``--redact`` hides what was written;
``agy-harness sim --recording FILE`` serves it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.recording import load_recording
from agy_harness.composition.cli import main
from agy_harness.composition.entrypoints.record import record
from agy_harness.composition.entrypoints.replay import replay
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import COMMITTED_TYPES, Event, GateOpened
from tests.integration.helpers import FAST

TURNS = ["Say hello in one short sentence.", "run: git status", "ask: which part should we work on first?"]


def committed(events: list[Event]) -> list[dict]:
    return [e.model_dump(mode="json") for e in events if e.type in COMMITTED_TYPES]


async def _live_and_recorded(
    tmp_path: Path, *, redacting: bool = False
) -> tuple[list[Event], Path, Simulator]:
    sim = Simulator(pace=0.02)
    await sim.start()
    path = tmp_path / "session.jsonl"
    stop = asyncio.Event()
    live: list[Event] = []
    async with RpcClient(sim.base_url) as client:
        with open(path, "w", encoding="utf-8") as out:
            recorder = asyncio.create_task(
                record(client, sim.cascade_id, out, redacting=redacting, stop=stop)
            )
            async with (
                asyncio.timeout(60),
                open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST) as s,
            ):
                for text in TURNS:
                    await s.send(text)
                    async for event in s.events():
                        live.append(event)
                        if isinstance(event, GateOpened):
                            await s.answer(event.gate_id, True if event.kind == "permission" else "2")
                        if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                            break
            await asyncio.sleep(0.3)
            stop.set()
            assert (await recorder).frames > 0
    return live, path, sim


async def test_record_then_replay_gives_the_live_events(tmp_path: Path) -> None:
    live, path, sim = await _live_and_recorded(tmp_path)
    await sim.stop()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert "steps" in lines[0] and "steps" in lines[-1] and any("update" in x for x in lines)
    replayed = replay([str(path)])
    assert committed(replayed) == committed(live)


async def test_redacted_recording_keeps_the_shape_and_hides_the_text(tmp_path: Path) -> None:
    live, path, sim = await _live_and_recorded(tmp_path, redacting=True)
    await sim.stop()
    text = path.read_text()
    for secret in ("git status", "On branch main", "which part should we work on", "Hello! I am Antigravity"):
        assert secret not in text
    assert "<redacted " in text
    replayed = replay([str(path)])
    assert [e["type"] for e in committed(replayed)] == [e["type"] for e in committed(live)]
    assert [e["id"] for e in committed(replayed)] == [e["id"] for e in committed(live)]


async def test_the_simulator_serves_a_recording(tmp_path: Path) -> None:
    live, path, sim = await _live_and_recorded(tmp_path)
    recorded_id = sim.cascade_id
    await sim.stop()
    async with Simulator(pace=0.0) as served:
        assert load_recording(served, path) == recorded_id
        async with RpcClient(served.base_url) as client:
            again = tmp_path / "again.jsonl"
            with open(again, "w", encoding="utf-8") as out:
                stop = asyncio.Event()
                asyncio.get_running_loop().call_later(0.5, stop.set)
                await record(client, recorded_id, out, stop=stop)
    assert committed(replay([str(again)])) == committed(live)


def test_the_record_command_fails_in_one_line_without_agy(tmp_path: Path, capsys: object) -> None:
    assert main(["record", "--port", "1", "--out", str(tmp_path / "x.jsonl"), "--seconds", "1"]) == 1
    assert main(["record", "--out"]) == 2


async def test_a_recording_is_made_private(tmp_path: Path) -> None:
    """A recording holds the whole conversation (commands, their output, unredacted by default): the
    file ``record --out`` makes is 0600, by the real CLI under the usual umask 022 (on main: 0644)."""
    import sys

    out = tmp_path / "session.jsonl"
    script = (
        "import os, sys; os.umask(0o022); from agy_harness.composition.entrypoints.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    async with Simulator(pace=0) as sim:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, "record", "--port", str(sim.port),
            "--seconds", "1", "--out", str(out), stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert out.stat().st_mode & 0o777 == 0o600 and out.read_text()  # private, and it holds the steps


async def test_seconds_are_the_recordings_own_time(tmp_path: Path) -> None:
    """``--seconds N`` records N seconds from the opening snapshot on: an agy slow to answer that first
    call (1.5 s here) still has its stream recorded for 1 s. Before, the clock ran from before the first
    call, so the stream was never read (``0 frame(s)``), and the command's own late imports (issue 47's
    lighter start) were spent from the same second."""
    import sys

    out = tmp_path / "session.jsonl"
    async with Simulator(pace=0) as sim:
        sim.faults.delay, sim.faults.delay_methods = 1.5, {"GetCascadeTrajectorySteps"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agy_harness.composition.cli", "record", "--port", str(sim.port),
            "--seconds", "1", "--out", str(out), stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert "steps" in lines[0] and "steps" in lines[-1]
    assert any("update" in line for line in lines[1:-1]), err.decode()  # the stream's first frame
    assert "0 frame(s)" not in err.decode()
