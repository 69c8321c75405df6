"""Our side of bench_reference.py's stream comparison, in its own process like the reference's.

    python our_worker.py stream PORT CASCADE   -> runs until stdin closes, then
                                                  {"events": [[t, step_index, type, len], ...]}
    python our_worker.py raw PORT CASCADE      -> the same from the bare transport: RpcClient.stream
                                                  frames, decoded, text growth per planner step (no
                                                  harness, no mapper): the floor any reader pays

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


def main() -> int:
    logging.basicConfig(level=logging.ERROR)
    cmd, port, cascade = sys.argv[1:]
    run = {"stream": stream, "raw": raw}[cmd]
    print(json.dumps(asyncio.run(run(int(port), cascade))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
