"""The simulator's unary connect-RPC methods (``exa.language_server_pb.LanguageServerService``).

Proto-JSON: unknown request fields are ignored (only the known ones are read).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from .catalog import catalog_answer
from .faults import Faults, with_drift
from .state import Cascade, RpcFailure, not_found


class UnaryHost(Protocol):
    """What the unary methods use of the simulator."""

    model: str
    models: dict[str, dict[str, Any]]
    faults: Faults
    _cascades: dict[str, Cascade]

    async def handle_interaction(self, cascade_id: str, interaction: dict[str, Any]) -> None: ...
    async def acknowledge_code_action(self, request: dict[str, Any]) -> None: ...
    async def cancel(self, cascade_id: str | None = None) -> bool: ...
    async def clear(self) -> str: ...
    def _submit(self, c: Cascade, text: str, model: str) -> str: ...
    async def start_cascade(self) -> str: ...
    def trajectory_summaries(self) -> dict[str, dict[str, Any]]: ...
    async def send_agent_message(self, cascade_id: str, text: str) -> None: ...


async def handle(sim: UnaryHost, method: str, request: dict[str, Any]) -> dict[str, Any]:
    """Answer one unary call (raises :class:`RpcFailure` for connect errors)."""
    if method == "Heartbeat":
        return {}
    if method == "GetConversationMetadata":
        c = sim._cascades.get(str(request.get("conversationId") or ""))
        if c is None:
            raise not_found()
        return {"metadata": {"rootConversationId": c.root_id}}
    if method == "GetCascadeTrajectorySteps":
        c = sim._cascades.get(str(request.get("cascadeId") or ""))
        if c is None:
            raise not_found()
        # agy's reference: GetCascadeTrajectorySteps {cascadeId, stepOffset}
        offset = request.get("stepOffset")
        start = offset if type(offset) is int and offset > 0 else 0
        # the steps themselves, not a deep copy: the server encodes the answer as soon as this returns
        # (server.py's _http, no await between), before any step can change; a copy per poll was most
        # of the simulator's CPU on big conversations (a 4 MiB step copied on every poll)
        steps = c.steps[start:]
        c.reads += 1
        c.last_read = time.monotonic()
        c.steps_sent += len(steps)
        return {"steps": [with_drift(x, "step") for x in steps] if sim.faults.drift else steps}
    if method == "HandleCascadeUserInteraction":
        interaction = request.get("interaction")
        await sim.handle_interaction(
            str(request.get("cascadeId") or ""), interaction if isinstance(interaction, dict) else {}
        )
        return {}
    if method == "AcknowledgeCodeActionStep":  # agy's file-edit review (.code_review)
        await sim.acknowledge_code_action(request)
        return {}
    if method == "CancelCascadeSteps":
        c = sim._cascades.get(str(request.get("cascadeId") or ""))
        if c is None:
            raise not_found()
        await sim.cancel(c.id)
        return {}
    if method == "SendUserCascadeMessage":
        c = sim._cascades.get(str(request.get("cascadeId") or ""))
        if c is None:
            raise not_found()
        items = request.get("items")
        text = "".join(
            str(i.get("text") or "")
            for i in (items if isinstance(items, list) else [])
            if isinstance(i, dict)
        )
        if not text.strip():
            raise RpcFailure(400, "invalid_argument", "user message is empty")
        config = request.get("cascadeConfig")
        planner = config.get("plannerConfig") if isinstance(config, dict) else None
        model = planner.get("planModel") if isinstance(planner, dict) else None
        if text.strip() == "/clear":
            await sim.clear()
        else:
            sim._submit(c, text, model if isinstance(model, str) and model else sim.model)
        return {}
    if method == "StartCascade":
        return {"cascadeId": await sim.start_cascade()}
    if method == "GetAvailableModels":
        answer = catalog_answer(sim.model, sim.models)
        if sim.faults.drift:
            models = answer["response"]["models"]
            answer["response"]["models"] = {k: with_drift(v, "model") for k, v in models.items()}
        return answer
    if method == "GetAllCascadeTrajectories":
        return {"trajectorySummaries": sim.trajectory_summaries()}
    if method == "SendAgentMessage":
        c = sim._cascades.get(str(request.get("cascadeId") or ""))
        if c is None:
            raise not_found()
        text = request.get("message") or request.get("text") or ""
        await sim.send_agent_message(c.id, str(text))
        return {}
    if method == "StreamCascadeReactiveUpdates":
        raise RpcFailure(500, "unknown", "reactive state is deprecated")
    raise RpcFailure(404, "unimplemented", f"{method} is not implemented")
