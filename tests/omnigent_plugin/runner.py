"""Driving the plugin through omnigent's own harness runner entry point, as omnigent's process manager
does: ``omnigent.runtime.harnesses._runner --harness agy-harness --module <the registered module>
--socket S --conversation-id C --parent-pid P`` -- forked by omnigent's runner zygote (the way a host's
runner starts it: ``zygote.py``) or exec'd as ``python -P -m ...`` (the way any other runner does) --
then the harness API on the Unix socket (``POST /v1/sessions/C/events``: ``message`` streams a turn as
SSE; ``approval``, ``interrupt``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .zygote import WORKSPACE_ENV, Zygote

HARNESS_ID = "agy-harness"
CONVERSATION = "conv_agy_plugin_test"
_REGISTERED: dict[Path, str] = {}  # environment's Python -> the registered module


@dataclass
class Turn:
    """One streamed turn: every SSE event in order, read in the background."""

    events: list[dict[str, Any]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    status: int = 0

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def text(self) -> str:
        return "".join(e["delta"] for e in self.of_type("response.output_text.delta"))

    @property
    def terminal(self) -> dict[str, Any] | None:
        for e in self.events:
            if e.get("type") in ("response.completed", "response.failed", "response.cancelled"):
                return e
        return None

    async def wait_for(self, kind: str, count: int = 1, timeout: float = 30.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                found = self.of_type(kind)
                if len(found) >= count:
                    return found[count - 1]
                if self.done.is_set():
                    raise AssertionError(
                        f"turn ended without {count} x {kind}: {[e.get('type') for e in self.events]}"
                    )
                self.changed.clear()
                await self.changed.wait()

    async def finished(self, timeout: float = 60.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            await self.done.wait()
        terminal = self.terminal
        assert terminal is not None, [e.get("type") for e in self.events]
        return terminal


class RunnerProcess:
    """The harness process of one conversation: forked by ``zygote`` (omnigent's runner zygote), or,
    without one, exec'd from ``python``; its output in ``workdir``'s runner.log (exec'd) or
    harness.log (forked: the zygote points a harness's stdio at its process log, as omnigent does)."""

    def __init__(
        self, python: Path, env: Mapping[str, str], workdir: Path, zygote: Zygote | None = None
    ) -> None:
        self.python = python
        self.env = dict(env)
        self.workdir = workdir
        self.zygote = zygote
        self.socket = workdir / "h.sock"
        self.proc: asyncio.subprocess.Process | None = None
        self.pid: int | None = None  # (forked: the zygote's child)
        self.client: httpx.AsyncClient | None = None
        self.log = workdir / ("harness.log" if zygote is not None else "runner.log")
        self._tasks: list[asyncio.Task[None]] = []

    def returncode(self) -> int | None:
        if self.zygote is not None:
            return None if self.pid is None else self.zygote.returncode(self.pid)
        return None if self.proc is None else self.proc.returncode

    async def __aenter__(self) -> RunnerProcess:
        module = await self.registered_module()
        env = {**os.environ, **self.env, "OMNIGENT_PROCESS_LOG_FILE": str(self.workdir / "harness.log")}
        env.pop("PYTHONPATH", None)
        flags = [
            "--harness",
            HARNESS_ID,
            "--module",
            module,
            "--socket",
            str(self.socket),
            "--conversation-id",
            CONVERSATION,
            "--parent-pid",
            str(os.getpid()),
        ]
        if self.zygote is not None:
            self.pid = self.zygote.fork_harness(flags, {**env, WORKSPACE_ENV: str(self.workdir)})
        else:
            with self.log.open("wb") as out:
                self.proc = await asyncio.create_subprocess_exec(
                    str(self.python),
                    "-P",
                    "-m",
                    "omnigent.runtime.harnesses._runner",
                    *flags,
                    env=env,
                    cwd=str(self.workdir),
                    stdout=out,
                    stderr=asyncio.subprocess.STDOUT,
                )
        self.client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=str(self.socket)), base_url="http://harness", timeout=None
        )
        async with asyncio.timeout(60):
            while True:
                if (code := self.returncode()) is not None:
                    raise AssertionError(f"runner exited {code}: {self.log.read_text()}")
                if self.socket.exists():
                    with contextlib.suppress(httpx.TransportError):
                        if (await self.client.get("/health")).status_code == 200:
                            break
                await asyncio.sleep(0.1)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        if self.client is not None:
            await self.client.aclose()
        if self.zygote is not None and self.pid is not None:
            await self._stop_forked(self.zygote, self.pid)
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            try:
                async with asyncio.timeout(15):
                    await self.proc.wait()
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()

    @staticmethod
    async def _stop_forked(zygote: Zygote, pid: int) -> None:
        """SIGTERM (SIGKILL after 15 s) the forked harness, until the zygote reaped it (its pid is
        never signalled after: the zygote, its parent, holds it until then)."""
        signals = [(0.0, signal.SIGTERM), (15.0, signal.SIGKILL)]
        loop = asyncio.get_running_loop()
        start = loop.time()
        while zygote.returncode(pid) is None:
            assert loop.time() - start < 30, f"the forked harness {pid} outlived SIGKILL"
            if signals and loop.time() - start >= signals[0][0]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signals.pop(0)[1])
            await asyncio.sleep(0.05)

    async def registered_module(self) -> str:
        """The module omnigent's registry names for our harness id (what the process manager spawns);
        asked once per environment (a Python importing omnigent's registry: every runner test did)."""
        if (known := _REGISTERED.get(self.python)) is not None:
            return known
        code = (
            "import json; from omnigent.harness_plugins import plugin_state, harness_modules;"
            "s = plugin_state(); print(json.dumps({'errors': s.load_errors, 'module': harness_modules().get("
            f"{HARNESS_ID!r})}}))"
        )
        proc = await asyncio.create_subprocess_exec(
            str(self.python), "-P", "-c", code, cwd=str(self.workdir), stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        state = json.loads(out)
        assert state["errors"] == {}, state
        assert state["module"], state
        _REGISTERED[self.python] = str(state["module"])
        return _REGISTERED[self.python]

    def _url(self) -> str:
        return f"/v1/sessions/{CONVERSATION}/events"

    async def post(self, body: dict[str, Any]) -> httpx.Response:
        assert self.client is not None
        return await self.client.post(self._url(), json=body)

    async def message(self, text: str, *, model: str = "agy-agent", **extra: Any) -> Turn:
        """Start a turn; its SSE stream is read into the returned :class:`Turn` in the background."""
        assert self.client is not None
        turn = Turn()
        body = {"type": "message", "role": "user", "content": text, "model": model, **extra}
        started = asyncio.Event()

        async def read() -> None:
            assert self.client is not None
            try:
                async with self.client.stream("POST", self._url(), json=body) as response:
                    turn.status = response.status_code
                    started.set()
                    if response.status_code != 200:
                        turn.events.append(
                            {
                                "type": "http",
                                "status": response.status_code,
                                "body": (await response.aread()).decode(),
                            }
                        )
                        return
                    name = None
                    async for line in response.aiter_lines():
                        if line.startswith("event: "):
                            name = line[7:]
                        elif line.startswith("data: "):
                            event = json.loads(line[6:])
                            event.setdefault("type", name)
                            turn.events.append(event)
                            turn.changed.set()
            finally:
                started.set()
                turn.done.set()
                turn.changed.set()

        self._tasks.append(asyncio.create_task(read()))
        await started.wait()
        return turn

    async def approve(self, elicitation_id: str, action: str, content: dict[str, Any] | None = None) -> int:
        body: dict[str, Any] = {"type": "approval", "elicitation_id": elicitation_id, "action": action}
        if content is not None:
            body["content"] = content
        return (await self.post(body)).status_code

    async def interrupt(self) -> int:
        return (await self.post({"type": "interrupt"})).status_code


async def stream_lines(turn: Turn) -> AsyncIterator[dict[str, Any]]:
    seen = 0
    while True:
        while seen < len(turn.events):
            yield turn.events[seen]
            seen += 1
        if turn.done.is_set():
            return
        turn.changed.clear()
        await turn.changed.wait()
