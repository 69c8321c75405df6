"""The version gate: what this agy can do, and therefore which adapters the harness uses.

The version comes from ``agy --version`` (first ``x.y.z``); the capabilities from probing the RPC
surface (a method agy does not serve raises MethodMissing). A version alone never enables a method the probe
found missing; a method that disappears at run time still demotes its adapter (the harness does that).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agy_harness.ports.errors import AgyCallFailed, MethodMissing

if TYPE_CHECKING:
    from agy_harness.adapters.rpc.client import RpcClient
    from agy_harness.ports.protocols import StepSource

log = logging.getLogger("agy_harness.version_gate")

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``x.y.z`` in ``text`` (agy prints e.g. ``1.0.10`` then build details)."""
    match = _VERSION.search(text or "")
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


async def agy_version(binary: str = "agy", timeout: float = 5.0) -> str | None:
    """``agy --version``, or ``None`` when agy is not installed or does not answer."""
    path = shutil.which(binary)
    if path is None:
        return None
    try:
        proc = await asyncio.create_subprocess_exec(
            path, "--version", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        async with asyncio.timeout(timeout):  # (wait_for can swallow a cancel on 3.11)
            out, _ = await proc.communicate()
    except (OSError, TimeoutError) as exc:
        log.warning("agy --version failed: %s", exc)
        return None
    return out.decode(errors="replace").strip()


def _simulated_version(cmdline: list[str]) -> str | None:
    """What ``agy --version`` of the simulator process with this command line prints (its profile)."""
    from agy_harness.adapters.rpc.discovery import _is_simulator
    from agy_harness.adapters.simulator.profiles import DEFAULT_PROFILE, PROFILES

    if not _is_simulator(cmdline):
        return None
    profile = DEFAULT_PROFILE
    for i, arg in enumerate(cmdline):
        if arg == "--profile" and i + 1 < len(cmdline):
            profile = cmdline[i + 1]
        elif arg.startswith("--profile="):
            profile = arg.partition("=")[2]
    known = PROFILES.get(profile)
    return known.version_text() if known is not None else None


async def bound_agy_version(pid: int | None) -> str | None:
    """The version of the agy discovery bound (process ``pid``): a simulator says which agy it plays;
    for agy itself, ``agy --version`` (its language server is a child process with no version flag)."""
    if pid is not None:
        import psutil

        try:
            cmdline = psutil.Process(pid).cmdline()
        except (psutil.Error, OSError):
            cmdline = []
        simulated = _simulated_version(cmdline)
        if simulated is not None:
            return simulated
    return await agy_version()


class _Caller(Protocol):
    async def call(
        self, method: str, body: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Capabilities:
    version: tuple[int, int, int] | None
    stream: bool
    rpc_turns: bool
    transcript_root: Path | None = None

    def describe(self) -> str:
        v = ".".join(map(str, self.version)) if self.version else "(version unknown)"
        reads = "streams its steps" if self.stream else "polls its steps (this agy has no stream)"
        turns = (
            "takes turns over RPC"
            if self.rpc_turns
            else "takes turns only in its terminal (no RPC turn-send)"
        )
        transcript = ", transcript tail" if self.transcript_root else ""
        return f"agy {v}: {reads}, {turns}{transcript}"


async def method_exists(client: _Caller, method: str) -> bool:
    """Probe ``method`` with an empty request: anything but MethodMissing means agy has it.

    The empty request names no cascade, so agy refuses it without side effects.
    """
    try:
        await client.call(method, {}, timeout=2.0)
    except MethodMissing:
        return False
    except Exception:
        return True
    return True


async def stream_exists(client: RpcClient, cascade_id: str = "") -> bool:
    """Open ``StreamAgentStateUpdates`` briefly: MethodMissing means this agy has no stream.

    Like :func:`method_exists`, the probe's request names no conversation (``cascade_id`` is not
    used), so agy answers it without reading one: with an error trailer ("not found"), which means
    it has the method, or with a stream. The probe reads at most the first envelope's header
    (``RpcClient.stream_opens``) and closes. Probing the bound conversation made agy build its whole
    replay (the first frame) for nothing: on a 10,000-step conversation, the simulator spent as
    much again as the attach itself.
    """
    try:
        await client.stream_opens("StreamAgentStateUpdates", {})
    except MethodMissing:
        return False
    except AgyCallFailed:
        return True  # refused, broken or open and idle (a timeout), but served
    return True


def _default_transcript_root(cascade_id: str) -> Path | None:
    """The data root under which agy wrote this conversation's transcript (either file), if any."""
    from agy_harness.adapters.transcript.locate import DEFAULT_ROOTS, find_transcript

    for root in DEFAULT_ROOTS:
        if find_transcript([root], cascade_id) is not None:
            return root
    return None


async def detect_capabilities(
    client: RpcClient,
    cascade_id: str,
    *,
    version_text: str | None = None,
    transcript_root: Path | None = None,
) -> Capabilities:
    """Probe the RPC surface and look for the transcript; log one line saying what was found."""
    stream = await stream_exists(client, cascade_id)
    rpc_turns = await method_exists(client, "SendUserCascadeMessage")
    root = transcript_root if transcript_root is not None and transcript_root.exists() else None
    if transcript_root is None:  # agy's own data roots: ~/.gemini/antigravity-cli, ~/.gemini/antigravity
        root = _default_transcript_root(cascade_id)
    caps = Capabilities(
        parse_version(version_text or ""), stream=stream, rpc_turns=rpc_turns, transcript_root=root
    )
    log.info("version gate: %s", caps.describe())
    return caps


@dataclass(frozen=True)
class AdapterChoice:
    """What the version gate picked: the step sources and turn senders, in preference order.

    ``read`` and ``turns`` are the keys the container's selectors use (``stream_poll``,
    ``poll_transcript``, ``rpc_tmux``, ``none``...); sub-agents follow ``read``
    (:func:`subagent_source`). Run-time demotion (a method agy stops serving) is the harness's: it
    drops an adapter from these lists, it never adds one.
    """

    read: str
    turns: str


def choose_adapters(caps: Capabilities, *, tmux: bool = False) -> AdapterChoice:
    """Stream when the probe found it, always the poll, the transcript tail when it exists; RPC
    turn-send when agy has it, then tmux when a pane was given."""
    read = (["stream"] if caps.stream else []) + ["poll"] + (["transcript"] if caps.transcript_root else [])
    turns = (["rpc"] if caps.rpc_turns else []) + (["tmux"] if tmux else [])
    return AdapterChoice("_".join(read), "_".join(turns) or "none")


def subagent_source(
    sources: Sequence[StepSource], stream: Callable[[], StepSource]
) -> Callable[[], StepSource] | None:
    """A sub-agent's own source: streamed when the sources chosen for the conversation stream (each
    stream has its own connection), else None: sub-agents are polled."""
    return stream if any(source.name == "stream" for source in sources) else None
