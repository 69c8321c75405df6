"""Runs INSIDE the reference's Python 3.12 venv (omnigent 0.19.1): the reference's own code on our inputs.

    <ref-python> ref_worker.py mapper-passes STEPS.json -> {"loaded"}, then for each line on stdin
                                                           one pass: {"seconds"} (until stdin closes)
    <ref-python> ref_worker.py process STEPS.json       -> {"steps_per_s", "n", "events"}
    <ref-python> ref_worker.py stream PORT CASCADE      -> runs until stdin closes, then
                                                           {"events": [[t, step_index, type, len], ...]}
                                                           (step_index -1: an event that is not a text delta)
    <ref-python> ref_worker.py attach-stream PORT CASCADE CAUGHT_UP LAST
                                                        -> bench_attach.py: {"wall", "cpu"} once step
                                                           CAUGHT_UP was processed; after "go" on stdin
                                                           {"started"}, then {"cpu"} once step LAST was

* ``mapper-passes``: ``omnigent.harnesses.antigravity_native.steps.map_step_to_events`` over every
  step, one pass whenever the parent asks (it interleaves them with its own).
* ``process``: the same steps through its reader's per-step work, ``_process_stream_step`` (dedup,
  deltas, committed items, status edges, usage, model change, gate hand-off and withdrawal): the
  work ``Reconciler.feed`` does. Its events are collected, not posted; best of 5, a fresh reader
  state each time (the gate hand-off's tasks are cancelled after each run, untimed).
* ``attach-stream``: the reader's stream path from connect (``_stream_loop``: its HTTP/1.1 stream, frame
  decode, ``_process_stream_step``: dedup, deltas, committed items, status edges, usage, model
  change, gates), until it has processed a given step; then its CPU while steps are appended.
* ``stream``: the reader's ``_stream_loop`` on the simulator (``rpc.stream_agent_state_updates``,
  httpx HTTP/1.1 over TLS, as it speaks to real agy).

Every event the reader would POST to omnigent is handed to a recorder instead (``_post_event``),
stamped with ``time.perf_counter()`` (CLOCK_MONOTONIC: comparable with the parent process's
stamps). The model catalog is answered locally and the gate bridge is a no-op, so neither adds
network time. Not part of the package: benchmarks only.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from omnigent.harnesses.antigravity_native import reader
from omnigent.harnesses.antigravity_native.steps import map_step_to_events

RECORDED: list[list[Any]] = []


async def _record(client: Any, session_id: str, event: Any) -> None:
    t = time.perf_counter()
    data = event.data if isinstance(event.data, dict) else {}
    message_id = str(data.get("message_id") or "")
    if event.event_type.endswith("output_text_delta") and message_id.endswith(":planner"):
        RECORDED.append([t, int(message_id.split(":")[-2]), "text_delta", len(str(data.get("delta") or ""))])
    else:
        RECORDED.append([t, -1, event.event_type, 0])


async def _catalog(state: Any) -> dict[str, object]:
    return {}


async def _no_interaction(*args: Any, **kwargs: Any) -> None:
    return None


reader._post_event = _record  # type: ignore[assignment]
reader._ensure_catalog = _catalog  # type: ignore[assignment]


def _state(port: int = 0) -> Any:
    return reader._ReaderState(seen=set(), interacted=set(), port=port)


def mapper_passes(path: str) -> None:
    with open(path) as fh:
        steps = json.load(fh)
    print(json.dumps({"loaded": len(steps)}), flush=True)
    for _ in sys.stdin:
        t = time.perf_counter()
        for s in steps:
            map_step_to_events(s, conversation_id="bench")
        print(json.dumps({"seconds": time.perf_counter() - t}), flush=True)


async def process(path: str) -> dict[str, Any]:
    with open(path) as fh:
        steps = json.load(fh)
    posted: list[Any] = []

    async def collect(client: Any, session_id: str, event: Any) -> None:
        posted.append(event)

    reader._post_event = collect  # type: ignore[assignment]
    step = reader._process_stream_step
    best = 0.0
    for _ in range(5):
        state, posted[:] = _state(0), []
        t = time.perf_counter()
        for s in steps:
            await step(s, client=None, session_id="s", cascade_id="bench", state=state,
                       on_pending_interaction=_no_interaction)  # fmt: skip
        best = max(best, len(steps) / (time.perf_counter() - t))
        for task in asyncio.all_tasks() - {asyncio.current_task()}:  # its gate re-scans: not timed
            task.cancel()
        await asyncio.sleep(0)
    reader._post_event = _record  # type: ignore[assignment]
    return {"steps_per_s": best, "n": len(steps), "events": len(posted)}


def _follow(port: int, cascade: str, stopping: asyncio.Event) -> asyncio.Task[None]:
    """Its reader's stream loop on ``cascade``, as it follows a conversation, until ``stopping``."""
    return asyncio.create_task(
        reader._stream_loop(
            port=port, cascade_id=cascade, client=None, session_id="s",
            on_pending_interaction=_no_interaction, state=_state(port), stop=stopping.is_set,
        )
    )  # fmt: skip


async def stream(port: int, cascade: str) -> dict[str, Any]:
    stopping = asyncio.Event()
    task = _follow(port, cascade, stopping)
    print(json.dumps({"ready": True}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes it
    stopping.set()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return {"events": RECORDED}


async def attach_stream(port: int, cascade: str, caught_up: int, last: int) -> dict[str, Any]:
    """Its stream path from connect: _stream_loop until step ``caught_up``'s events were posted."""
    loop = asyncio.get_running_loop()
    wall, cpu = time.perf_counter(), time.process_time()
    done = {caught_up: asyncio.Event(), last: asyncio.Event()}
    process = reader._process_stream_step

    async def watched(step: Any, **kwargs: Any) -> None:
        await process(step, **kwargs)
        info = (step.get("metadata") or {}).get("sourceTrajectoryStepInfo") or {}
        seen = done.get(int(info.get("stepIndex", 0)))
        if seen is not None:
            seen.set()

    reader._process_stream_step = watched  # type: ignore[assignment]
    stopping = asyncio.Event()
    task = _follow(port, cascade, stopping)
    await done[caught_up].wait()
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}), flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    cpu = time.process_time()
    print(json.dumps({"started": True}), flush=True)
    await done[last].wait()
    out = {"cpu": time.process_time() - cpu}
    stopping.set()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return out


def main() -> int:
    cmd, *args = sys.argv[1:]
    if cmd == "mapper-passes":
        mapper_passes(args[0])
        return 0
    if cmd == "process":
        out = asyncio.run(process(args[0]))
    elif cmd == "attach-stream":
        out = asyncio.run(attach_stream(int(args[0]), args[1], int(args[2]), int(args[3])))
    elif cmd == "stream":
        out = asyncio.run(stream(int(args[0]), args[1]))
    else:
        raise SystemExit(f"unknown command {cmd!r}")
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
