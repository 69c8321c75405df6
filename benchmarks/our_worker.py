"""Our side of bench_reference.py's stream comparison, in its own process like the reference's.

    python our_worker.py stream PORT CASCADE   -> runs until stdin closes, then
                                                  {"events": [[t, step_index, type, len], ...]}
    python our_worker.py raw PORT CASCADE      -> the same from the bare transport: RpcClient.stream
                                                  frames, decoded, text growth per planner step (no
                                                  harness, no mapper): the floor any reader pays
    python our_worker.py attach PORT CASCADE CAUGHT_UP LAST
                                               -> bench_attach.py: {"wall", "cpu"} once the event of
                                                  step CAUGHT_UP reached the sink; after "go" on stdin,
                                                  {"started"}, then {"cpu"} once step LAST's did

``open_session`` (the public API, default adapters) on the simulator's port; every TextDelta is
stamped with ``time.perf_counter()`` when the sink gets it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import Event, GateOpened
from agy_harness.ports.protocols import GateAnswer

RECORDED: list[list[Any]] = []


class Sink:
    async def deliver(self, events: Sequence[Event]) -> int:
        t = time.perf_counter()
        for e in events:
            if e.type in ("text_delta", "assistant_message"):
                text = getattr(e, "delta", None) if e.type == "text_delta" else getattr(e, "text", "")
                RECORDED.append([t, int(e.step_key.rsplit("/", 1)[-1] or 0), e.type, len(text or "")])
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return GateAnswer(allow=True)

    async def withdraw(self, gate_id: str) -> None:
        return None


async def stream(port: int, cascade: str) -> dict[str, Any]:
    async with open_session(base_url=f"https://127.0.0.1:{port}", cascade_id=cascade, sink=Sink()):
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    return {"events": RECORDED}


async def raw(port: int, cascade: str) -> dict[str, Any]:
    seen: dict[int, int] = {}

    async def follow(client: RpcClient) -> None:
        async for frame in client.stream("StreamAgentStateUpdates", {"conversationId": cascade}):
            t = time.perf_counter()
            update = (frame.payload or {}).get("update") or {}
            for step in update.get("mainTrajectoryUpdate", {}).get("stepsUpdate", {}).get("steps", []):
                if step.get("type") != "CORTEX_STEP_TYPE_PLANNER_RESPONSE":
                    continue
                idx = int(step.get("metadata", {}).get("sourceTrajectoryStepInfo", {}).get("stepIndex", 0))
                n = len((step.get("plannerResponse") or {}).get("modifiedResponse") or "")
                if n > seen.get(idx, 0):
                    RECORDED.append([t, idx, "text_delta", n - seen.get(idx, 0)])
                    seen[idx] = n

    async with RpcClient(f"https://127.0.0.1:{port}") as client:
        task = asyncio.create_task(follow(client))
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return {"events": RECORDED}


class Watch:
    """A sink that only notes when the events of two given steps arrive."""

    def __init__(self, caught_up: str, last: str) -> None:
        self.keys = {caught_up: asyncio.Event(), last: asyncio.Event()}

    async def deliver(self, events: Sequence[Event]) -> int:
        for e in events:
            seen = self.keys.get(e.step_key)
            if seen is not None:
                seen.set()
        return len(events)

    async def ask(self, gate: GateOpened) -> GateAnswer:
        return GateAnswer(allow=False)

    async def withdraw(self, gate_id: str) -> None:
        return None


async def attach(port: int, cascade: str, caught_up: int, last: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    wall, cpu = time.perf_counter(), time.process_time()
    trajectory = "7a1e0000-a77a-4c4e-9000-00000000a77a"  # bench_attach.TRAJECTORY
    sink = Watch(f"{trajectory}/{caught_up}", f"{trajectory}/{last}")
    async with open_session(base_url=f"https://127.0.0.1:{port}", cascade_id=cascade, sink=sink):
        await sink.keys[f"{trajectory}/{caught_up}"].wait()
        out = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
        print(json.dumps(out), flush=True)
        await loop.run_in_executor(None, sys.stdin.readline)
        cpu = time.process_time()
        print(json.dumps({"started": True}), flush=True)
        await sink.keys[f"{trajectory}/{last}"].wait()
        return {"cpu": time.process_time() - cpu}


def main() -> int:
    logging.basicConfig(level=logging.ERROR)
    cmd, port, cascade, *more = sys.argv[1:]
    if cmd == "attach":
        out = asyncio.run(attach(int(port), cascade, int(more[0]), int(more[1])))
    else:
        out = asyncio.run({"stream": stream, "raw": raw}[cmd](int(port), cascade))
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
