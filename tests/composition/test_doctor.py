"""``agy-harness doctor``: a read-only probe; it flags a field the simulator adds under its drift
switch, and reports nothing unknown for the simulator's normal shapes (built from the recordings)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.cli import main
from agy_harness.composition.entrypoints.doctor.probe import diagnose, render
from agy_harness.composition.root.surface import SURFACE
from tests.in_process import run_cli


async def _report(sim: Simulator) -> dict:
    async with RpcClient(sim.base_url) as client:
        return await diagnose(client, sim.cascade_id, "agy 1.0.10")


async def test_doctor_on_the_simulator_knows_everything_and_changes_nothing() -> None:
    async with Simulator(pace=0.0) as sim:
        for text in ("Say hello in one short sentence.", "autorun `ls` then list the directory"):
            await sim.submit_user_turn(text)
            await sim.wait_idle(timeout=10)
        before = (sim.steps(), sim.cascade_ids())
        calls = len(sim.calls)
        report = await _report(sim)
        assert (sim.steps(), sim.cascade_ids()) == before  # read-only: no step, no conversation
        assert "StartCascade" not in sim.calls[calls:]
    assert report["drift"] == [], report["drift"]
    methods = report["methods"]
    for name in ("Heartbeat", "GetAllCascadeTrajectories", "GetAvailableModels", "GetCascadeTrajectorySteps",
                 "SendUserCascadeMessage", "HandleCascadeUserInteraction", "StreamAgentStateUpdates"):  # fmt: skip
        assert methods[name] == "present", (name, methods[name])
    assert methods["StartCascade"].startswith("not probed")
    assert report["steps"] >= 8 and report["version"] == {"version": "1.0.10"}  # fields, not one string
    assert list(methods) == list(SURFACE)  # the one table of probes (the version gate's), in its order


def test_doctor_has_no_probe_table_of_its_own() -> None:
    source = (Path(__file__).resolve().parents[2] / "composition/entrypoints/doctor/probe.py").read_text()
    labels = {"GetAvailableModels", "GetAllCascadeTrajectories", "StreamAgentStateUpdates"}  # drift's "where"
    assert not [m for m in SURFACE.keys() - labels if m in source]


async def test_doctor_flags_what_a_newer_agy_adds() -> None:
    async with Simulator(pace=0.0) as sim:
        await sim.submit_user_turn("run: pwd")  # a waiting permission, with its persist suggestion
        await sim.wait_idle(timeout=10)
        sim.faults.drift = True
        report = await _report(sim)
    found = {(d["where"], d["what"]) for d in report["drift"]}
    assert ("step RUN_COMMAND", "field metadata.futureField") in found
    assert ("step USER_INPUT", "field metadata.futureField") in found
    assert ("GetAvailableModels", "model field futureFlag") in found
    assert ("StreamAgentStateUpdates", "field futureFrameField") in found
    text = render(report)
    assert "metadata.futureField" in text and "drift: " in text


async def test_doctor_flags_an_unknown_step_type_and_interaction_kind() -> None:
    async with Simulator(pace=0.0) as sim:
        await sim.submit_user_turn("write the file notes.md")  # the guessed fileReview gate
        await sim.wait_idle(timeout=10)
        report = await _report(sim)
    found = {(d["where"], d["what"]) for d in report["drift"]}
    assert ("step", "type CORTEX_STEP_TYPE_WRITE_TO_FILE") not in found  # a known type (tool name table)
    assert ("step WRITE_TO_FILE", "requestedInteraction kind fileReview") in found


def test_the_doctor_command_binds_by_port_and_prints_json() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agy_harness.composition.cli", "sim", "--pace", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(4)]  # type: ignore[union-attr]
        port = next(x for x in lines if x.startswith("port ")).split()[1]
        deadline = time.monotonic() + 10
        while True:
            # the command's entry in this process (tests/in_process.py: the same argv, stdout, stderr
            # and exit code); the agy it probes is the `sim` process above
            out = run_cli("doctor", "--port", port, "--json", "--agy-version", "1.0.10")
            if out.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["endpoint"].endswith(f":{port}") and report["methods"]["Heartbeat"] == "present"
        assert report["version"] == {"version": "1.0.10"} and report["agy_found"] is True
        assert [c["name"] for c in report["environment"]][-1] == "agy"
        assert main(["doctor", "--port", "1", "--agy-version", "x"]) == 1  # nothing there: one line, exit 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)
