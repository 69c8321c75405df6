"""The transcript line format: every recorded fixture survives step -> line -> JSON -> step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agy_harness.adapters.simulator.transcript import split_point
from agy_harness.adapters.transcript.format import (
    encode_line,
    is_completed,
    line_to_step,
    step_identity,
    step_to_line,
    transcript_path,
)
from agy_harness.core.reconciler import Reconciler
from agy_harness.core.steps import camel, parse_step
from tests.core.fixtures import CASCADE, fixture, names

ALL = names()


def round_trip(step: dict[str, Any]) -> dict[str, Any]:
    line = step_to_line(step)
    assert line is not None
    back = line_to_step(json.loads(encode_line(line).decode("utf-8")), cascade_id=CASCADE)
    assert back is not None
    return back


def test_there_are_fixtures() -> None:
    assert len(ALL) >= 15


@pytest.mark.parametrize("name", ALL)
def test_line_shape(name: str) -> None:
    fx = fixture(name)
    line = step_to_line(fx)
    assert line is not None
    info = fx["metadata"]["sourceTrajectoryStepInfo"]
    assert line["type"] == fx["type"].removeprefix("CORTEX_STEP_TYPE_")
    assert line["status"] == fx["status"].removeprefix("CORTEX_STEP_STATUS_")
    assert not line["type"].startswith("CORTEX_") and not line["status"].startswith("CORTEX_")
    assert line["step_index"] == int(info.get("stepIndex", 0))
    assert line["trajectory_id"] == info["trajectoryId"]
    assert line["execution_id"] == fx["metadata"]["executionId"]
    assert line["created_at"] == fx["metadata"]["createdAt"]
    assert "sourceTrajectoryStepInfo" not in line["metadata"]
    assert "internalMetadata" not in line["metadata"]
    body = camel(line["type"])
    assert line[body] == fx[body]
    # the line is one line of JSON
    assert encode_line(line).count(b"\n") == 1


@pytest.mark.parametrize("name", ALL)
def test_round_trip_preserves_what_the_core_reads(name: str) -> None:
    fx = fixture(name)
    back = round_trip(fx)
    assert back["type"] == fx["type"]
    assert back["status"] == fx["status"]
    body = camel(fx["type"].removeprefix("CORTEX_STEP_TYPE_"))
    assert back[body] == fx[body]
    for key in fx:
        if key != "metadata":
            assert back[key] == fx[key], key
    meta, fmeta = back["metadata"], fx["metadata"]
    assert meta.get("toolCall") == fmeta.get("toolCall")
    assert meta.get("modelUsage") == fmeta.get("modelUsage")
    assert meta["executionId"] == fmeta["executionId"]
    info, finfo = meta["sourceTrajectoryStepInfo"], fmeta["sourceTrajectoryStepInfo"]
    assert info["trajectoryId"] == finfo["trajectoryId"]
    assert info["cascadeId"] == finfo["cascadeId"] == CASCADE
    if fx["type"] == "CORTEX_STEP_TYPE_USER_INPUT":
        assert "stepIndex" not in info
    else:
        assert info["stepIndex"] == finfo["stepIndex"]
    # everything else in metadata is carried verbatim; only internalMetadata and metadataIndex are lost
    expected = {k: v for k, v in fmeta.items() if k not in ("internalMetadata", "sourceTrajectoryStepInfo")}
    assert {k: v for k, v in meta.items() if k != "sourceTrajectoryStepInfo"} == expected
    a, b = parse_step(fx), parse_step(back)
    assert a is not None and b is not None
    assert (a.key, a.type, a.status, a.cascade_id) == (b.key, b.type, b.status, b.cascade_id)
    assert step_identity(fx) == step_identity(back) == str(a.key)


@pytest.mark.parametrize("name", ALL)
def test_the_core_maps_a_round_tripped_step_like_the_original(name: str) -> None:
    fx = fixture(name)
    original = [e.model_dump() for e in Reconciler(CASCADE).feed(fx)]
    again = [e.model_dump() for e in Reconciler(CASCADE).feed(round_trip(fx))]
    assert again == original


def test_a_planner_step_maps_to_an_assistant_message_through_the_line() -> None:
    events = Reconciler(CASCADE).feed(round_trip(fixture("planner_response_text")))
    assert any(type(e).__name__ == "AssistantMessage" for e in events)


def test_is_completed() -> None:
    assert is_completed(fixture("run_command_done"))
    assert is_completed(fixture("run_command_error"))
    assert is_completed(fixture("user_input"))
    assert not is_completed(fixture("run_command_waiting"))
    assert not is_completed(fixture("ask_question_waiting"))


@pytest.mark.parametrize(
    "obj",
    [
        None,
        [],
        "text",
        42,
        {},
        {"type": "", "trajectory_id": "t", "step_index": 1},
        {"type": "RUN_COMMAND", "step_index": 1},
        {"type": "RUN_COMMAND", "trajectory_id": "", "step_index": 1},
        {"type": "RUN_COMMAND", "trajectory_id": "t", "step_index": "x"},
        {"type": "RUN_COMMAND", "trajectory_id": "t"},
        {"type": 5, "trajectory_id": "t", "step_index": 1},
    ],
)
def test_line_to_step_rejects_what_is_not_a_line(obj: object) -> None:
    assert line_to_step(obj) is None


def test_line_to_step_tolerates_prefixed_and_stringly_values() -> None:
    step = line_to_step(
        {"type": "CORTEX_STEP_TYPE_CHECKPOINT", "status": "DONE", "trajectory_id": "t", "step_index": "7"}
    )
    assert step is not None
    assert step["type"] == "CORTEX_STEP_TYPE_CHECKPOINT"
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert step["metadata"]["sourceTrajectoryStepInfo"] == {"trajectoryId": "t", "stepIndex": 7}


def test_a_user_input_line_needs_no_step_index() -> None:
    step = line_to_step({"type": "USER_INPUT", "status": "DONE", "trajectory_id": "t", "execution_id": "e"})
    assert step is not None
    parsed = parse_step(step)
    assert parsed is not None and str(parsed.key) == "t/u:e"


def test_step_to_line_rejects_non_steps() -> None:
    assert step_to_line(None) is None
    assert step_to_line({"metadata": {}}) is None


def test_transcript_path(tmp_path: Any) -> None:
    path = transcript_path(tmp_path, "abc")
    assert path == tmp_path / "brain" / "abc" / ".system_generated" / "logs" / "transcript_full.jsonl"


def test_non_ascii_stays_utf8_and_split_point_lands_inside_a_character() -> None:
    line = step_to_line(
        {
            "type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
            "status": "CORTEX_STEP_STATUS_DONE",
            "metadata": {"sourceTrajectoryStepInfo": {"trajectoryId": "t", "stepIndex": 1}},
            "plannerResponse": {"response": "héllo €"},
        }
    )
    assert line is not None
    data = encode_line(line)
    assert "é".encode() in data
    cut = split_point(data)
    with pytest.raises(UnicodeDecodeError):
        data[:cut].decode("utf-8")
    assert (data[:cut] + data[cut:]).decode("utf-8").endswith("\n")
