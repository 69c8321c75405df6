"""agy's RPC surface: every method this project uses, and how each is probed without changing anything.

The one table of probes. The version gate probes two of its methods for its choice
(:func:`~.version_gate.detect_capabilities`: the stream, RPC turn-send); ``agy-harness doctor`` probes
all of them with the same probes (:func:`probe_surface`) and reads what the answers carry.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from agy_harness.adapters.rpc.actions import parse_summaries
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.codec import unwrap_update
from agy_harness.core.steps import as_list
from agy_harness.ports.errors import MethodMissing

from .container import newest_root
from .version_gate import method_exists

#: answered to an empty request (the answer is kept: doctor reads it)
CALL = "call"
#: probed with an empty request that names no conversation: agy refuses it without side effects,
#: and only MethodMissing means it is missing
EMPTY = "empty"
#: opened on the conversation for its first frame, then closed
STREAM = "stream"

#: method -> how it is probed (anything else: it is not probed, and why)
SURFACE: dict[str, str] = {
    "Heartbeat": CALL,
    "GetAllCascadeTrajectories": CALL,
    "GetAvailableModels": CALL,
    "GetConversationMetadata": EMPTY,
    "GetCascadeTrajectorySteps": EMPTY,
    "SendUserCascadeMessage": EMPTY,
    "HandleCascadeUserInteraction": EMPTY,
    "CancelCascadeSteps": EMPTY,
    "SendAgentMessage": EMPTY,
    "StartCascade": "it would create a conversation",
    # agy's file-edit review (core.code_review): only a human's answer may acknowledge one
    "AcknowledgeCodeActionStep": "it could acknowledge agy's file-edit review",
    "StreamAgentStateUpdates": STREAM,
}


@dataclass
class Surface:
    """What probing found: each method's state, the answers of the ``CALL`` methods, the
    conversation probed (the one given, else agy's most recent), its steps and the stream's first
    update."""

    methods: dict[str, str] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    cascade: str | None = None
    steps: list[Any] = field(default_factory=list)
    first_update: dict[str, Any] | None = None


async def probe_surface(client: RpcClient, cascade_id: str | None) -> Surface:
    """Probe every method of :data:`SURFACE` (read-only: see the table)."""
    found = Surface()
    for method, how in SURFACE.items():
        if how == CALL:
            try:
                found.answers[method] = await client.call(method, {}, timeout=5.0)
                found.methods[method] = "present"
            except Exception as exc:
                found.methods[method] = "missing" if isinstance(exc, MethodMissing) else f"error: {exc}"
        elif how == EMPTY:
            found.methods[method] = "present" if await method_exists(client, method) else "missing"
        elif how != STREAM:
            found.methods[method] = f"not probed ({how})"
    found.cascade = cascade_id or newest_root(
        parse_summaries(found.answers.get("GetAllCascadeTrajectories", {}))
    )
    if not found.cascade:
        found.methods["StreamAgentStateUpdates"] = "not probed (no conversation to open it on)"
        return found
    with contextlib.suppress(Exception):
        answer = await client.call("GetCascadeTrajectorySteps", {"cascadeId": found.cascade})
        found.steps = as_list(answer.get("steps"))
    found.first_update = await _first_update(client, found.cascade)
    found.methods["StreamAgentStateUpdates"] = (
        "present" if found.first_update is not None else "missing or silent"
    )
    return found


async def _first_update(client: RpcClient, cascade_id: str) -> dict[str, Any] | None:
    frames = client.stream("StreamAgentStateUpdates", {"conversationId": cascade_id})
    with contextlib.suppress(Exception):
        async with contextlib.aclosing(frames), asyncio.timeout(3.0):
            async for frame in frames:
                return unwrap_update(frame.payload)
    return None
