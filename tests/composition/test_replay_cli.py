"""``agy-harness replay``: every accepted input shape, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agy_harness.composition.cli import main
from tests.core.fixtures import FIXTURES, fixture

TURN = [
    "user_input",
    "conversation_history",
    "planner_response_tool_call_run_command",
    "run_command_waiting",
    "run_command_done",
    "planner_response_text",
    "checkpoint",
]


def lines(capsys: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_replay_prints_stable_json_lines_for_the_fixtures(capsys: Any) -> None:
    assert main(["replay", *sorted(str(p) for p in FIXTURES.glob("*.json"))]) == 0
    out = lines(capsys)
    assert out and all({"id", "type", "cascade_id", "step_key"} <= set(e) for e in out)
    assert len({e["id"] for e in out}) == len(out)
    assert {e["cascade_id"] for e in out} == {"2399249c-4a48-40f1-bf3b-4c6e5d3a5a0e"}
    calls = [e for e in out if e["type"] == "tool_call"]
    assert sorted(c["name"] for c in calls) == [
        "ask_question",
        "list_dir",
        "list_dir",
        "manage_subagents",
        "run_command",
        "view_file",
    ]


def _shapes(tmp_path: Path, steps: list[dict[str, Any]]) -> dict[str, Path]:
    files = {
        "list": json.dumps(steps),
        "poll": json.dumps({"steps": steps}),
        "jsonl_updates": "\n".join(
            json.dumps({"update": {"mainTrajectoryUpdate": {"stepsUpdate": {"indices": [i], "steps": [s]}}}})
            for i, s in enumerate(steps)
        )
        + "\n",
        "jsonl_bare": "\n".join(
            json.dumps({"mainTrajectoryUpdate": {"stepsUpdate": {"steps": [s]}}}) for s in steps
        ),
        "jsonl_steps": "\n".join(json.dumps(s) for s in steps),
    }
    out = {}
    for name, text in files.items():
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(text)
    return out


def test_every_input_shape_gives_the_same_events(tmp_path: Path, capsys: Any) -> None:
    steps = [fixture(n) for n in TURN]
    results = {}
    for name, path in _shapes(tmp_path, steps).items():
        assert main(["replay", str(path)]) == 0, name
        results[name] = lines(capsys)
    one = tmp_path / "one.json"
    one.write_text(json.dumps(steps[0]))
    assert main(["replay", str(one)]) == 0
    assert lines(capsys) == results["list"][:3]
    first = results.pop("list")
    assert all(r == first for r in results.values())
    assert [e["type"] for e in first] == [
        "status",
        "model_change",
        "user_message",
        "usage",
        "gate_opened",
        "gate_withdrawn",
        "tool_call",
        "tool_result",
        "assistant_message",
        "usage",
        "status",
    ]


def test_a_whole_turn_in_poll_and_stream_shapes_commits_the_same(tmp_path: Path, capsys: Any) -> None:
    poll = [fixture(n) for n in ("user_input", "planner_response_tool_call_run_command", "run_command_done")]
    stream = [fixture(n) for n in ("user_input", "stream_planner_tool_call", "stream_run_command_done")]
    got = []
    for steps in (poll, stream):
        path = tmp_path / "t.json"
        path.write_text(json.dumps(steps))
        assert main(["replay", str(path)]) == 0
        got.append([(e["type"], e["id"]) for e in lines(capsys)])
    assert got[0] == got[1]


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('{"type": ', "1:10"),
        ('{"steps": []}\n{"update": {}}\n{oops}\n', "3:2"),
        ("42", "1:1"),
        ('{"hello": 1}', "1:1"),
    ],
)
def test_bad_input_names_file_and_position_exits_2_prints_nothing(
    tmp_path: Path, capsys: Any, text: str, position: str
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(fixture("user_input")))
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert main(["replay", str(good), str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{bad}:{position}:" in captured.err


def test_missing_file(tmp_path: Path, capsys: Any) -> None:
    assert main(["replay", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err


def test_console_script_is_installed() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "agy_harness.composition.cli",
            "replay",
            str(FIXTURES / "user_input.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout.splitlines()[-1])["type"] == "user_message"
