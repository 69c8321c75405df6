"""``agy-harness audit``: list and filter, verify (exit 1 naming the broken record), export as JSON
lines and as an Agent Audit Trail that the independent reference verifier ``aat-verify`` accepts (and
rejects once tampered). The ledger is one a real session wrote: answers from two surfaces."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.store.ledger_file import LEDGER, FileLedger
from agy_harness.composition.entrypoints.cli import main
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import GateOpened
from tests.integration.helpers import FAST

from .helpers import records


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    directory = tmp_path_factory.mktemp("audit") / "ledger"

    async def session() -> None:
        async with Simulator(profile="1.0.10", gate_timeout=None) as sim:
            ledger = FileLedger(directory)
            async with open_session(
                pids=[os.getpid()], cascade_id=sim.cascade_id, options=FAST, ledger=ledger
            ) as s:
                answers = iter([("yes", "board"), ("no", "acp")])
                await s.send("run: git status && rm -rf build")
                async for event in s.events():
                    if isinstance(event, GateOpened):
                        value, surface = next(answers)
                        await s.answer(event.gate_id, value, surface=surface)
                    if event.type == "status" and event.status == "idle":  # type: ignore[union-attr]
                        break

    asyncio.run(session())
    return directory


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_and_filters(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--ledger", str(written))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert "allow" in lines[0] and "on board" in lines[0] and "run_command: git status" in lines[0]
    assert "deny" in lines[1] and "on acp" in lines[1] and "rm -rf build" in lines[1]
    assert run(capsys, "--ledger", str(written), "--surface", "acp")[1].splitlines() == [lines[1]]
    assert run(capsys, "--ledger", str(written), "--verdict", "allow")[1].splitlines() == [lines[0]]
    conversation = records(written, "decision")[0]["body"]["conversation"]
    assert len(run(capsys, "--ledger", str(written), "--conversation", conversation[:6])[1].splitlines()) == 2
    assert run(capsys, "--ledger", str(written), "--conversation", "zzz")[1] == ""
    assert run(capsys, "--ledger", str(written), "--since", "2000-01-01", "--until", "2000-01-02")[1] == ""
    assert len(run(capsys, "--ledger", str(written), "--since", "2000-01-01T00:00Z")[1].splitlines()) == 2
    as_json = [json.loads(x) for x in run(capsys, "--ledger", str(written), "--json")[1].splitlines()]
    assert [r["body"]["decided_by"]["surface"] for r in as_json] == ["board", "acp"]


def test_bad_input_exits_2_in_one_line(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--ledger", str(written), "--since", "yesterday-ish")
    assert code == 2 and "not a date or time" in err
    code, _, err = run(capsys, "--ledger", str(written), "export")
    assert (code, err) == (2, "agy-harness audit: export needs --format aat or --format jsonl\n")
    code, _, err = run(capsys, "--ledger", str(written), "export", "--format", "aat")
    assert code == 2 and err.count("\n") == 1 and "needs --out DIR" in err


def test_verify_names_the_broken_record(
    written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "verify", "--ledger", str(written))
    assert code == 0 and "verifies" in out
    copy = tmp_path / "copy"
    shutil.copytree(written, copy)
    lines = (copy / LEDGER).read_bytes().splitlines(keepends=True)
    (copy / LEDGER).write_bytes(b"".join(lines[:1] + lines[2:]))  # record 2 deleted
    code, out, _ = run(capsys, "verify", "--ledger", str(copy))
    assert (
        code == 1
        and f"BROKEN: record 2 is missing (deleted): the ledger holds records up to {len(lines)}" in out
    )
    code, _, err = run(capsys, "export", "--format", "jsonl", "--ledger", str(copy))
    assert code == 1 and "not exported: the ledger does not verify: record 2 is missing" in err


def test_export_jsonl_is_the_ledgers_records(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "export", "--format", "jsonl", "--ledger", str(written))
    assert code == 0 and [json.loads(x) for x in out.splitlines()] == records(written)


def aat_verify(trail: Path, keys: Path) -> subprocess.CompletedProcess[str]:
    tool = Path(sys.executable).with_name("aat-verify")
    return subprocess.run(
        [str(tool), str(trail), "--keys", str(keys), "--json"], capture_output=True, text=True, timeout=60
    )


def test_the_aat_export_passes_aat_verify_and_a_tampered_one_does_not(
    written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "aat"
    code, said, _ = run(capsys, "export", "--format", "aat", "--out", str(out), "--ledger", str(written))
    assert code == 0 and "AAT records" in said
    result = aat_verify(out / "trail.jsonl", out / "keystore.json")
    assert result.returncode == 0, result.stdout + result.stderr
    checks = json.loads(result.stdout)
    assert checks["verified"] is True
    assert any(c["name"].startswith("Signatures verify") and c["pass"] for c in checks["checks"])
    trail = [json.loads(x) for x in (out / "trail.jsonl").read_text().splitlines()]
    assert len(trail) == len(records(written)) + 2
    assert trail[0]["action_detail"]["event"] == "session_start" and trail[0]["prev_hash"] is None
    decision = trail[1]
    assert decision["action_type"] == "decision" and decision["outcome"] == "success"
    assert decision["action_detail"]["ledger"] == {"sequence": 1, "hash": records(written)[0]["hash"]}
    assert decision["human_override"]["surface"] == "board"
    assert trail[-1]["action_detail"]["ledger_checkpoint"]["sequence"] == len(records(written))
    # tampered: a verdict changed in the exported trail
    text = (out / "trail.jsonl").read_text().replace('"decision_type": "deny"', '"decision_type": "allow"', 1)
    assert '"decision_type": "allow"' in text
    (out / "trail.jsonl").write_text(text)
    assert aat_verify(out / "trail.jsonl", out / "keystore.json").returncode == 1


def test_an_export_is_as_private_as_the_ledger(written: Path, tmp_path: Path) -> None:
    """The ledger is 0600 in 0700 (what was approved, by whom): its exports are made so too, by the
    real CLI under the usual umask 022 (on main: trail.jsonl and the JSON-lines file were 0644, the
    directory 0755, readable by every local user)."""
    out, lines = tmp_path / "aat", tmp_path / "ledger.jsonl"
    for args in (["--format", "aat", "--out", str(out)], ["--format", "jsonl", "--out", str(lines)]):
        done = subprocess.run(
            [sys.executable, "-c", "import os, sys; os.umask(0o022); from agy_harness.composition.entrypoints.cli "
             "import main; sys.exit(main(sys.argv[1:]))", "audit", "export", "--ledger", str(written), *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    modes = {
        p.name: p.stat().st_mode & 0o777 for p in (out, out / "trail.jsonl", out / "keystore.json", lines)
    }
    assert modes == {"aat": 0o700, "trail.jsonl": 0o600, "keystore.json": 0o600, "ledger.jsonl": 0o600}
