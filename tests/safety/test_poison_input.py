"""Findings 5, 6, 7: no body, frame or step poisons the reader, replay or a sink.

A step nested thousands of levels deep, an integer of 5,000 digits and a lone surrogate (``"\\ud800"``,
valid JSON) are put beside real recorded steps, in a poll answer and in a stream frame served over
real TLS HTTP/2, in replay files, and through the JSONL sink and the file cursor store.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.codec import FLAG_END_STREAM, encode_envelope
from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
from agy_harness.adapters.sinks.jsonl import JsonlSink
from agy_harness.adapters.store.cursor_file import FileCursorStore
from agy_harness.composition.cli import main as cli_main
from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import ToolCall
from agy_harness.ports.protocols import Cursor
from tests.core.fixtures import CASCADE, fixture
from tests.rpc.stub import Reply, Request, StubServer, const

DEPTH = 5000


def text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def deep_step() -> str:
    """A step nested DEPTH levels deep (json.loads raises RecursionError on it), in its body and in
    its tool call's argumentsJson."""
    step = fixture("list_directory_done")
    step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 30
    step["metadata"]["toolCall"]["argumentsJson"] = '{"deep": ' + "[" * DEPTH + "]" * DEPTH + "}"
    step["listDirectory"]["extra"] = "@"
    return text(step).replace('"@"', "[" * DEPTH + "]" * DEPTH)


def bigint_step() -> str:
    step = fixture("run_command_done")
    step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 31
    step["runCommand"]["exitCode"] = "@"
    return text(step).replace('"@"', "9" * 5000)


def surrogate_step() -> str:
    step = fixture("planner_response_text")
    step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 32
    step["plannerResponse"]["response"] = step["plannerResponse"]["modifiedResponse"] = "bad @ text"
    return text(step).replace("@", "\\ud800")  # a JSON escape of a lone surrogate


GOOD = ("run_command_done", "planner_response_text")


def poisoned_steps() -> str:
    parts = [text(fixture(GOOD[0])), deep_step(), bigint_step(), surrogate_step(), text(fixture(GOOD[1]))]
    return "[" + ",".join(parts) + "]"


def assert_contained(raws: list[Any]) -> None:
    reconciler = Reconciler(CASCADE)
    events = reconciler.feed_all(raws)
    keys = {e.step_key.rsplit("/", 1)[1] for e in events}
    assert {"6", "30", "31", "32"} <= keys, keys  # the good steps AND the readable rest of the poisoned
    [deep_call] = [e for e in events if isinstance(e, ToolCall) and e.step_key.endswith("/30")]
    assert "truncated: nested deeper than" in json.dumps(deep_call.arguments)
    for event in events:  # every event is encodable everywhere
        json.dumps(event.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
        event.model_dump_json()


@pytest.fixture
async def stub() -> AsyncIterator[StubServer]:
    server = StubServer()
    async with server.running():
        yield server


async def test_a_poisoned_poll_answer_keeps_every_other_step(stub: StubServer) -> None:
    body = ('{"steps": ' + poisoned_steps() + "}").encode()
    stub.routes["GetCascadeTrajectorySteps"] = const(200, body)
    async with RpcClient(stub.base_url) as client:
        raws = await RpcPollSource(client).read_steps(CASCADE)  # raised RecursionError before
    assert len(raws) == 5
    assert_contained(raws)


async def test_a_poisoned_stream_frame_keeps_every_other_step(stub: StubServer) -> None:
    data = ('{"update": {"conversationId": "c", "mainTrajectoryUpdate": {"stepsUpdate": {"steps": '
            + poisoned_steps() + "}}}}").encode()  # fmt: skip

    async def handler(_req: Request) -> Reply:
        async def gen() -> AsyncIterator[bytes]:
            yield struct.pack(">BI", 0, len(data)) + data
            yield encode_envelope({}, FLAG_END_STREAM)

        return Reply(200, gen(), "application/connect+json")

    stub.routes["StreamAgentStateUpdates"] = handler
    async with RpcClient(stub.base_url) as client:
        source = RpcStreamSource(client)
        batches = [b async for b in source.batches(CASCADE)]  # the whole frame was dropped before
    assert source.bad_frames == 0
    [batch] = batches
    assert_contained(list(batch.steps))


async def test_an_error_body_that_is_poison_is_still_an_rpc_error(stub: StubServer) -> None:
    stub.routes["Heartbeat"] = const(
        503, b'{"code": "unavailable", "message": ' + b"[" * DEPTH + b"]" * DEPTH + b"}"
    )
    async with RpcClient(stub.base_url) as client:
        from agy_harness.adapters.rpc.errors import RpcError

        with pytest.raises(RpcError):
            await client.call("Heartbeat", {})


def test_replay_contains_poison_and_prints_it_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "poisoned.json"
    path.write_text(poisoned_steps(), encoding="utf-8")
    assert cli_main(["replay", str(path)]) == 0  # exit 1 + traceback before
    out, err = capsys.readouterr()
    assert err == ""
    lines = [json.loads(line) for line in out.splitlines()]
    assert {line["step_key"].rsplit("/", 1)[1] for line in lines} >= {"6", "30", "31", "32"}
    assert "\ufffd" in out and "\ud800" not in out


@pytest.mark.parametrize(
    "content",
    ["{", '[{"type": 1}, ' + "[" * 20 + "]", '{"steps": 3}', "\x00\x01", '{"a": ' + "[" * DEPTH, "7"],
    ids=["broken", "unclosed", "steps-not-a-list", "binary", "deep-and-unclosed", "a-number"],
)
def test_replay_bad_input_is_one_line_exit_2_nothing_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    good = tmp_path / "good.json"
    good.write_text(text(fixture("run_command_done")), encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    assert cli_main(["replay", str(good), str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("agy-harness replay: ") and "Traceback" not in err


def test_replay_to_a_non_utf8_stdout_prints_everything_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "poisoned.json"
    path.write_text(poisoned_steps(), encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", "replay", str(path)],
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stderr == b""
    assert len([json.loads(line) for line in done.stdout.splitlines()]) >= 8


async def test_the_jsonl_sink_and_the_cursor_store_never_wedge(tmp_path: Path) -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    bad = ToolCall.model_construct(
        id="t/1/call", cascade_id="c", step_key="t/1", type="tool_call", call_id="t/1", name="n",
        arguments={"text": "lone \ud800 surrogate", "deep": deep},
    )  # fmt: skip
    good = ToolCall(id="t/2/call", cascade_id="c", step_key="t/2", call_id="t/2", name="n", arguments={})
    out = io.StringIO()
    assert await JsonlSink(out).deliver([bad, good]) == 2
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["id"] == "t/1/call" and first["arguments"]["text"] == "lone \ufffd surrogate"
    assert "truncated" in json.dumps(first["arguments"]["deep"])
    assert second["id"] == "t/2/call"

    store = FileCursorStore(tmp_path)
    store.save(Cursor(cascade_id="c", committed=["t/1"], state={"live": {"t/1": {"text": "a\ud800b"}}}))
    loaded = store.load("c")
    assert loaded is not None and loaded.committed == ["t/1"]
    assert loaded.state["live"]["t/1"]["text"] == "a\ud800b"  # saved and read back exactly
