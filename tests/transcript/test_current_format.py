"""agy's current transcript (``transcript.jsonl``, CHANGELOG 1.2.4 as quoted in issue #13): its lines,
truncation markers, compaction rewrites, both brain roots, and a session that moves between the RPC
and the transcript without re-emitting a committed step under another id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.sources import RpcPollSource
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.transcript import TranscriptWriter
from agy_harness.adapters.transcript import modern
from agy_harness.adapters.transcript.tail import TranscriptFollower, TranscriptTailSource
from agy_harness.core.reconciler import Reconciler
from agy_harness.ports.events import COMMITTED_TYPES, Event

from .helpers import Collector, append

CASCADE = "c0ffee00-0000-4000-8000-000000000001"

# Lines in the quoted shape: {step_index, source, type, status, created_at, content, thinking,
# tool_calls:[{name, args}], truncated_fields} (+ input_tokens, cache_read_tokens, output_tokens on
# PLANNER_RESPONSE); tool args are JSON strings; a long field is cut to "<truncated N bytes>".
LINES: list[dict[str, Any]] = [
    {"step_index": 0, "source": "USER_EXPLICIT", "type": "USER_INPUT", "status": "DONE",
     "created_at": "2026-11-02T10:00:00.123456Z", "content": "run: ls", "thinking": "", "tool_calls": [],
     "truncated_fields": []},
    {"step_index": 2, "source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE",
     "created_at": "2026-11-02T10:00:01Z", "content": "", "thinking": "I will list it.",
     "tool_calls": [{"name": "run_command", "args": "{\"CommandLine\":\"ls\",\"Cwd\":\"/w\"}"}],
     "truncated_fields": [], "input_tokens": 900, "cache_read_tokens": 0, "output_tokens": 40},
    {"step_index": 3, "source": "MODEL", "type": "RUN_COMMAND", "status": "DONE",
     "created_at": "2026-11-02T10:00:02Z", "content": "a.py\nb.py<truncated 2048 bytes>", "thinking": "",
     "tool_calls": [{"name": "run_command", "args": "{\"CommandLine\":\"ls\",\"Cwd\":\"/w\"}"}],
     "truncated_fields": ["content"]},
    {"step_index": 4, "source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE",
     "created_at": "2026-11-02T10:00:03Z", "content": "There are two files.", "thinking": "",
     "tool_calls": [], "truncated_fields": [], "input_tokens": 1000, "cache_read_tokens": 800,
     "output_tokens": 12},
]  # fmt: skip


def committed(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type in COMMITTED_TYPES and e.type != "status"]


def test_current_lines_become_the_events_agy_meant() -> None:
    steps = [modern.line_to_step(line, cascade_id=CASCADE) for line in LINES]
    assert all(s is not None for s in steps)
    events = Reconciler(CASCADE).feed_all(steps)
    by_type = {e.type: e for e in events}
    assert by_type["user_message"].text == "run: ls"  # type: ignore[union-attr]
    assert by_type["tool_call"].name == "run_command"  # type: ignore[union-attr]
    assert by_type["tool_call"].arguments == {"CommandLine": "ls", "Cwd": "/w"}  # type: ignore[union-attr]
    assert by_type["tool_result"].output == "a.py\nb.py<truncated 2048 bytes>"  # type: ignore[union-attr]
    assert by_type["assistant_message"].text == "There are two files."  # type: ignore[union-attr]
    usage = [e for e in events if e.type == "usage"][-1]
    assert (usage.cumulative_input_tokens, usage.cumulative_output_tokens) == (1900, 52)  # type: ignore[union-attr]
    assert usage.cumulative_cache_read_input_tokens == 800  # type: ignore[union-attr]
    # no trajectory id in the file: the placeholder names the steps until a real one is known
    assert all(e.id.startswith(f"transcript:{CASCADE}/") for e in events)
    assert [e.status for e in events if e.type == "status"] == ["running", "idle"]  # type: ignore[union-attr]
    assert steps[2]["metadata"]["transcriptTruncatedFields"] == ["content"]  # type: ignore[index]


def test_bad_current_lines_are_refused() -> None:
    for bad in (
        {"type": "USER_INPUT", "content": "x"},
        {"step_index": 1},
        {"step_index": -1, "type": "X"},
        3,
    ):
        assert modern.line_to_step(bad, cascade_id=CASCADE) is None
    # a USER_INPUT without created_at cannot be told from another turn: refused
    line = dict(LINES[0], created_at="")
    assert modern.line_to_step(line, cascade_id=CASCADE) is None


async def _session(tmp_path: Path) -> tuple[list[Any], list[Any], str]:
    """One simulated conversation (two turns) as the RPC poll shows it and as transcript.jsonl has it."""
    async with Simulator(pace=0.0) as sim:
        writer = TranscriptWriter(tmp_path, current=True)
        writer.attach(sim)
        for text in ("Say hello in one short sentence.", "autorun `ls` then list the directory"):
            await sim.submit_user_turn(text)
            await sim.wait_idle(timeout=10.0)
        async with RpcClient(sim.base_url) as client:
            polled = await RpcPollSource(client).read_steps(sim.cascade_id)
        writer.close()
        follower = TranscriptFollower(writer.path_for(sim.cascade_id), cascade_id=sim.cascade_id)
        lines = [s for r in follower.poll() for s in r.steps]
        follower.close()
        return list(polled), lines, sim.cascade_id


async def test_rpc_then_transcript_re_emits_nothing(tmp_path: Path) -> None:
    polled, lines, cascade = await _session(tmp_path)
    r = Reconciler(cascade)
    first = committed(r.feed_all(polled))
    assert len(first) >= 8
    assert committed(r.feed_all(lines)) == []


async def test_transcript_then_rpc_re_emits_nothing_and_later_steps_use_the_real_ids(tmp_path: Path) -> None:
    polled, lines, cascade = await _session(tmp_path)
    r = Reconciler(cascade)
    half = len(lines) // 2
    early = committed(r.feed_all(lines[:half]))
    assert early and all(e.id.startswith("transcript:") for e in early)
    assert committed(r.feed_all(polled)) != []  # the steps the transcript had not reached yet
    trajectory = polled[-1]["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"]
    # transcript, then the RPC, then the transcript again: every step exactly once
    r2 = Reconciler(cascade)
    seen = (
        committed(r2.feed_all(lines[:half])) + committed(r2.feed_all(polled)) + committed(r2.feed_all(lines))
    )
    assert len({e.id for e in seen}) == len(seen)
    assert [e.text for e in seen if e.type == "user_message"] == [  # type: ignore[attr-defined]
        "Say hello in one short sentence.",
        "autorun `ls` then list the directory",
    ]
    assert len([e for e in seen if e.type == "tool_call"]) == 2
    assert len({e.text for e in seen if e.type == "assistant_message"}) == 2  # type: ignore[attr-defined]
    # what came after the RPC taught the real trajectory id carries it
    assert r2.state.trajectory_id == trajectory
    assert all(e.id.startswith(trajectory) for e in seen if e.type == "tool_call")
    assert committed(r2.feed_all([*lines, *polled])) == []


async def test_a_compaction_rewrite_in_place_re_emits_nothing_and_the_tail_goes_on(tmp_path: Path) -> None:
    async with Simulator(pace=0.0) as sim:
        writer = TranscriptWriter(tmp_path, current=True)
        writer.attach(sim)
        source = TranscriptTailSource(tmp_path, poll_interval=0.02, use_watchfiles=False)
        r = Reconciler(sim.cascade_id)
        async with Collector(source, sim.cascade_id) as c:
            await sim.submit_user_turn("Write a long story about a lighthouse keeper.")
            await sim.wait_idle(timeout=10.0)
            await c.until(lambda: any(s["type"].endswith("CHECKPOINT") for s in c.steps))
            events = committed(r.feed_all(c.steps))
            assert any(e.type == "assistant_message" for e in events)
            inode = writer.path_for(sim.cascade_id).stat().st_ino
            snapshots = sum(b.snapshot for b in c.batches)
            writer.compact(sim.cascade_id, keep=20)
            assert writer.path_for(sim.cascade_id).stat().st_ino == inode  # rewritten in place
            assert b"<truncated " in writer.path_for(sim.cascade_id).read_bytes()
            await c.until(lambda: sum(b.snapshot for b in c.batches) > snapshots)
            assert committed(r.feed_all(c.steps)) == []  # the compacted copies are the same steps
            await sim.submit_user_turn("Say hello in one short sentence.")
            await sim.wait_idle(timeout=10.0)
            # the tail reads the file as it is at each poll: the turn's input and its reply can come in
            # separate polls, so wait for the reply itself (waiting for the input alone lost the race
            # on a loaded machine: ['user_message'] only)
            later: list[Any] = []

            def replied() -> bool:
                later.extend(committed(r.feed_all(c.steps)))
                return any(e.type == "assistant_message" for e in later)

            await c.until(replied, timeout=30.0)
        writer.close()
    assert [e.type for e in later if e.type in ("user_message", "assistant_message")] == [
        "user_message",
        "assistant_message",
    ]


async def test_either_brain_root_and_either_file(tmp_path: Path) -> None:
    first, second = tmp_path / "antigravity-cli", tmp_path / "antigravity"
    source = TranscriptTailSource([first, second], poll_interval=0.02, use_watchfiles=False)
    legacy = second / "brain" / CASCADE / ".system_generated" / "logs" / "transcript_full.jsonl"
    async with Collector(source, CASCADE) as c:
        line = {"step_index": 5, "type": "PLANNER_RESPONSE", "status": "DONE", "trajectory_id": "t",
                "metadata": {}, "plannerResponse": {"response": "legacy"}}  # fmt: skip
        append(legacy, (json.dumps(line) + "\n").encode())
        await c.until(lambda: len(c.steps) == 1)
    assert c.steps[0]["plannerResponse"]["response"] == "legacy"
    current = first / "brain" / CASCADE / ".system_generated" / "logs" / "transcript.jsonl"
    append(current, (json.dumps(LINES[3]) + "\n").encode())
    assert source.path_for(CASCADE) == current  # the current file and the first root are preferred
