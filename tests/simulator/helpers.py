"""Talking to the simulator over real TLS HTTP/2 with httpx (no dependency on adapters/rpc)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator import envelope as env

SERVICE = "exa.language_server_pb.LanguageServerService"
JSON_HEADERS = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
STREAM_HEADERS = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}


def url(sim: Simulator, method: str) -> str:
    return f"{sim.base_url}/{SERVICE}/{method}"


@asynccontextmanager
async def client(http2: bool = True) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(http2=http2, verify=False, timeout=10.0) as c:
        yield c


async def call(c: httpx.AsyncClient, sim: Simulator, method: str, body: Any = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps({} if body is None else body).encode()
    resp = await c.post(url(sim, method), content=content, headers=JSON_HEADERS)
    assert resp.http_version == "HTTP/2"
    return resp


async def ok(c: httpx.AsyncClient, sim: Simulator, method: str, body: Any = None) -> dict[str, Any]:
    resp = await call(c, sim, method, body)
    assert resp.status_code == 200, resp.text
    value = resp.json()
    assert isinstance(value, dict)
    return value


def interaction(sim: Simulator, index: int, cascade_id: str | None = None, **kind: Any) -> dict[str, Any]:
    step = sim.steps(cascade_id)[index]
    trajectory = step["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"]
    return {
        "cascadeId": cascade_id or sim.cascade_id,
        "interaction": {"trajectoryId": trajectory, "stepIndex": index, **kind},
    }


def waiting_index(sim: Simulator, cascade_id: str | None = None) -> int:
    found = [i for i, s in enumerate(sim.steps(cascade_id)) if s["status"] == "CORTEX_STEP_STATUS_WAITING"]
    assert len(found) == 1, f"expected one WAITING step, got {found}"
    return found[0]


def short(step: dict[str, Any]) -> str:
    return step["type"].removeprefix("CORTEX_STEP_TYPE_")


class Stream:
    """An open StreamAgentStateUpdates, read by a background task: frames as ``(flags, payload)``."""

    def __init__(self, resp: httpx.Response) -> None:
        self.resp = resp
        self.frames: list[tuple[int, bytes]] = []
        self.raw = b""
        self.ended = False
        self.error: BaseException | None = None
        self._buf = b""
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            async for chunk in self.resp.aiter_bytes():
                self.raw += chunk
                frames, self._buf = env.decode_frames(self._buf + chunk)
                self.frames.extend(frames)
                self._changed.set()
        except httpx.HTTPError as exc:
            self.error = exc
        finally:
            self.ended = True
            self._changed.set()

    async def until(self, predicate: Callable[[Stream], bool], timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self):
                if self.ended:
                    assert predicate(self), "stream ended first"
                    return
                self._changed.clear()
                await self._changed.wait()

    async def next_frame(self, timeout: float = 5.0) -> tuple[int, bytes]:
        n = len(self.frames)
        await self.until(lambda s: len(s.frames) > n or s.ended, timeout)
        assert len(self.frames) > n, "stream ended without another frame"
        return self.frames[n]

    async def drain(self, timeout: float = 5.0) -> None:
        await self.until(lambda s: s.ended, timeout)

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task

    @property
    def pending(self) -> bytes:
        return self._buf

    def updates(self) -> list[dict[str, Any]]:
        out = []
        for flags, data in self.frames:
            if flags == 0:
                try:
                    value = json.loads(data)
                except ValueError:
                    continue
                out.append(value["update"])
        return out

    def trailer(self) -> dict[str, Any] | None:
        for flags, data in self.frames:
            if flags & env.FLAG_END_STREAM:
                return dict(json.loads(data))
        return None


@asynccontextmanager
async def stream(
    c: httpx.AsyncClient, sim: Simulator, conversation_id: str | None = None, *, body: bytes | None = None
) -> AsyncIterator[Stream]:
    content = body if body is not None else env.encode({"conversationId": conversation_id or sim.cascade_id})
    request = c.build_request(
        "POST", url(sim, "StreamAgentStateUpdates"), content=content, headers=STREAM_HEADERS
    )
    resp = await c.send(request, stream=True)
    s = Stream(resp)
    try:
        yield s
    finally:
        await s.close()
        await resp.aclose()


def steps_by_index(updates: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Every snapshot the stream carried, per step index, in order."""
    out: dict[int, list[dict[str, Any]]] = {}
    for u in updates:
        su = u["mainTrajectoryUpdate"]["stepsUpdate"]
        for i, s in zip(su["indices"], su["steps"], strict=False):
            out.setdefault(i, []).append(s)
    return out


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)
