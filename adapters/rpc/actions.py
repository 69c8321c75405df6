"""Write-side RPC adapters: gates, turns, interrupt, the cascade directory and the model catalog."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agy_harness.core import code_review
from agy_harness.core.models import preferred_model
from agy_harness.core.steps import as_dict, as_int, as_list, as_str, parse_step, user_model
from agy_harness.ports.events import Event, ModelChanged
from agy_harness.ports.protocols import (
    CascadeSummary,
    InteractionRejected,
    ModelCatalog,
    ModelInfo,
    StepSnapshot,
)

from .client import RpcClient
from .errors import RpcError, RpcUnreachable
from .shared_listing import shared_listing

log = logging.getLogger(__name__)

START_SOURCE = "CORTEX_TRAJECTORY_SOURCE_CLI"  # StartCascade's required field (agy 1.0.10, see omnigent)

ModelResolver = Callable[[str], Awaitable[str | None]]


def code_review_request(cascade_id: str, interaction: dict[str, Any]) -> dict[str, Any] | None:
    """The ``AcknowledgeCodeActionStep`` request for an answer to agy's file-edit review (the
    harness's ``codeAction`` pseudo-interaction, :mod:`agy_harness.core.code_review`): ``cascadeId``
    and the descriptor's fields as the core built them; None for any other interaction."""
    body = interaction.get(code_review.FIELD)
    if not isinstance(body, dict):
        return None
    return {"cascadeId": cascade_id, **{k: body[k] for k in code_review.REQUEST_FIELDS if k in body}}


class RpcInteractionDelivery:
    """``HandleCascadeUserInteraction {cascadeId, interaction}``; an answer to agy's file-edit review
    goes by ``AcknowledgeCodeActionStep`` instead (:func:`code_review_request`).

    An HTTP-level refusal becomes InteractionRejected (its ``reason`` classified there, once); no
    answer at all (agy down) stays an AgyUnreachable so the caller can tell "refused" from "not
    delivered".
    """

    def __init__(self, client: RpcClient) -> None:
        self._client = client

    async def deliver(self, cascade_id: str, interaction: dict[str, Any]) -> None:
        review = code_review_request(cascade_id, interaction)
        try:
            if review is not None:
                await self._client.call(code_review.METHOD, review)
            else:
                await self._client.call(
                    "HandleCascadeUserInteraction", {"cascadeId": cascade_id, "interaction": interaction}
                )
        except RpcUnreachable:
            raise
        except RpcError as exc:
            raise InteractionRejected(exc.message, status=exc.status, code=exc.code) from exc


class PlanModelResolver:
    """The model for a new turn: the one the user chose (``choice()``, e.g. an editor's model picker),
    else the latest USER_INPUT's planModel, else the catalog's default one (:func:`preferred_model`).

    The latest USER_INPUT's model is followed from the events the harness delivers (each model change
    is a ``model_change`` event: :meth:`observe`, a listener on the session bus), so a turn reads nothing; the
    conversation is read only while no event named its model (a resolver nobody feeds events to
    reads it every turn, as before). Reading the whole conversation on every turn cost 1.2 s a turn
    with a 50 MB step in it.
    """

    def __init__(
        self, snapshot: StepSnapshot, catalog: ModelCatalog, choice: Callable[[], str | None] | None = None
    ) -> None:
        self._snapshot = snapshot
        self._catalog = catalog
        self._choice = choice
        self._fallback: str | None = None
        self._latest: dict[str, str] = {}  # cascade id -> its latest USER_INPUT's model, as followed

    def observe(self, events: Sequence[Event]) -> None:
        """Session bus listener (delivered events): follow each conversation's model changes."""
        for event in events:
            if isinstance(event, ModelChanged) and event.model:
                self._latest[event.cascade_id] = event.model

    async def __call__(self, cascade_id: str) -> str | None:
        chosen = self._choice() if self._choice is not None else None
        if chosen:
            return chosen
        return self._latest.get(cascade_id) or await self._read_model(cascade_id) or await self.recommended()

    async def _read_model(self, cascade_id: str) -> str | None:
        try:
            steps = await self._snapshot.read_steps(cascade_id)
        except Exception as exc:  # a missing read must not block a turn: fall back to the catalog
            log.warning("planModel: could not read steps of %s: %s", cascade_id, exc)
            return None
        for raw in reversed(steps):
            step = parse_step(raw)
            if step is not None and step.type == "USER_INPUT":
                model = user_model(step)
                if model:
                    return model
        return None

    async def recommended(self) -> str | None:
        if self._fallback is None:
            try:
                models = await self._catalog.models()
            except Exception as exc:
                log.warning("planModel: model catalog unavailable: %s", exc)
                return None
            chosen = preferred_model(models)
            self._fallback = chosen.model if chosen else None
        return self._fallback


class RpcTurnSender:
    """``SendUserCascadeMessage``; a 404 is MethodMissing (the client's RpcMethodNotFound), so turn
    control demotes to tmux."""

    name = "rpc"

    def __init__(self, client: RpcClient, resolve_model: ModelResolver) -> None:
        self._client = client
        self._resolve_model = resolve_model

    async def send(self, cascade_id: str, text: str) -> None:
        body: dict[str, Any] = {"cascadeId": cascade_id, "items": [{"text": text}]}
        model = await self._resolve_model(cascade_id)
        if model:
            body["cascadeConfig"] = {"plannerConfig": {"planModel": model}}
        else:
            log.warning("sending a turn to %s without a planModel (none known)", cascade_id)
        await self._client.call("SendUserCascadeMessage", body)


class RpcInterrupter:
    """``CancelCascadeSteps`` (does not free a WAITING gate: the bridge denies it separately)."""

    def __init__(self, client: RpcClient) -> None:
        self._client = client

    async def interrupt(self, cascade_id: str) -> None:
        await self._client.call("CancelCascadeSteps", {"cascadeId": cascade_id})


def parse_summaries(answer: dict[str, Any]) -> list[CascadeSummary]:
    """``trajectorySummaries`` as a {cascadeId: summary} map (or, tolerantly, a list with cascadeId)."""
    raw = answer.get("trajectorySummaries")
    items: list[tuple[str, dict[str, Any]]]
    if isinstance(raw, dict):
        items = [(str(k), as_dict(v)) for k, v in raw.items()]
    elif isinstance(raw, list):
        items = [(as_str(as_dict(v).get("cascadeId")), as_dict(v)) for v in raw]
    else:
        items = []
    out = []
    for cascade_id, s in items:
        if not cascade_id:
            continue
        meta = as_dict(s.get("trajectoryMetadata"))
        out.append(
            CascadeSummary(
                cascade_id=cascade_id,
                parent_id=as_str(meta.get("parentConversationId")),
                root_id=as_str(s.get("rootConversationId")) or as_str(meta.get("rootConversationId")),
                status=as_str(s.get("status")),
                step_count=as_int(s.get("stepCount")),
                last_user_input_time=as_str(s.get("lastUserInputTime")),
                last_modified_time=as_str(s.get("lastModifiedTime")),
                trajectory_type=as_str(s.get("trajectoryType")),
                title=as_str(s.get("summary")),
                workspace_uris=tuple(
                    uri
                    for w in as_list(s.get("workspaces"))
                    if (uri := as_str(as_dict(w).get("workspaceFolderAbsoluteUri")))
                ),
            )
        )
    return out


class RpcCascadeDirectory:
    """``GetAllCascadeTrajectories``, shared by every session on the same agy (``shared_listing``)."""

    def __init__(self, client: RpcClient, *, share: bool = True) -> None:
        self._client = client
        self._share = share

    async def list_cascades(self) -> list[CascadeSummary]:
        if not self._share:
            return await self._fetch()
        return await shared_listing(self._client.base_url, self._fetch)

    async def _fetch(self) -> list[CascadeSummary]:
        return parse_summaries(await self._client.call("GetAllCascadeTrajectories", {}))


def parse_models(answer: dict[str, Any]) -> list[ModelInfo]:
    """``response.models`` ({key: entry} or, tolerantly, a list) and ``response.defaultAgentModelId``.

    An entry is ``{model, displayName, recommended, supportsThinking, thinkingBudget}`` (agy as the
    reference harness reads it); the older ``label``/``isRecommended`` names are read too. An answer
    without the ``response`` envelope is read as the catalog itself."""
    envelope = answer.get("response")
    catalog = envelope if isinstance(envelope, dict) else answer
    raw = catalog.get("models")
    default = as_str(catalog.get("defaultAgentModelId"))
    items: list[tuple[str, dict[str, Any]]]
    if isinstance(raw, dict):
        items = [(str(k), as_dict(v)) for k, v in raw.items()]
    elif isinstance(raw, list):
        items = [("", as_dict(v)) for v in raw]
    else:
        items = []
    out = []
    for key, m in items:
        model = as_str(m.get("model")) or key
        if not model:
            continue
        thinking = m.get("supportsThinking")
        budget = m.get("thinkingBudget")
        out.append(
            ModelInfo(
                model=model,
                label=as_str(m.get("displayName")) or as_str(m.get("label")),
                recommended=m.get("recommended") is True or m.get("isRecommended") is True,
                default=bool(default) and model == default,
                supports_thinking=thinking if isinstance(thinking, bool) else None,
                thinking_budget=_int_or_none(budget),
            )
        )
    return out


def _int_or_none(value: Any) -> int | None:
    """A proto-JSON int32/int64 (number or numeric string); None when absent or not a number."""
    if isinstance(value, bool) or value is None:
        return None
    return as_int(value) if as_int(value, default=-(2**63)) != -(2**63) else None


class RpcCascadeStarter:
    """``StartCascade``: a new conversation; agy echoes the id proposed (or mints one)."""

    def __init__(self, client: RpcClient) -> None:
        self._client = client

    async def start(self) -> str:
        proposed = str(uuid.uuid4())
        answer = await self._client.call("StartCascade", {"cascadeId": proposed, "source": START_SOURCE})
        minted = answer.get("cascadeId")
        return minted if isinstance(minted, str) and minted else proposed


class RpcModelCatalog:
    def __init__(self, client: RpcClient) -> None:
        self._client = client

    async def models(self) -> list[ModelInfo]:
        return parse_models(await self._client.call("GetAvailableModels", {}))
