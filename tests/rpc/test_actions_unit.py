"""Write-side adapters against a TLS stub: request shapes, error mapping, tolerant parsing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agy_harness.adapters.rpc.actions import (
    PlanModelResolver,
    RpcCascadeDirectory,
    RpcInteractionDelivery,
    RpcInterrupter,
    RpcModelCatalog,
    RpcTurnSender,
    parse_models,
    parse_summaries,
)
from agy_harness.adapters.rpc.client import RpcClient
from agy_harness.adapters.rpc.errors import RpcError, RpcUnreachable
from agy_harness.core.models import preferred_model
from agy_harness.ports.errors import MethodMissing
from agy_harness.ports.protocols import (
    CascadeDirectory,
    InteractionDelivery,
    InteractionRejected,
    Interrupter,
    ModelCatalog,
    ModelInfo,
    SourceUnavailable,
    TurnSender,
)
from tests.core.fixtures import FIXTURES
from tests.fakes import FixedCatalog, MemorySnapshot

from .stub import StubServer, const


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def test_adapters_satisfy_the_ports() -> None:
    client = RpcClient("https://127.0.0.1:1")
    assert isinstance(RpcInteractionDelivery(client), InteractionDelivery)
    assert isinstance(RpcTurnSender(client, lambda _c: _none()), TurnSender)
    assert isinstance(RpcInterrupter(client), Interrupter)
    assert isinstance(RpcCascadeDirectory(client), CascadeDirectory)
    assert isinstance(RpcModelCatalog(client), ModelCatalog)


async def _none() -> str | None:
    return None


async def test_interaction_delivery_shape_and_rejection(stub: StubServer) -> None:
    stub.routes["HandleCascadeUserInteraction"] = const(200, b"{}")
    interaction = {"trajectoryId": "t", "stepIndex": 4, "permission": {"allow": True}}
    async with RpcClient(stub.base_url) as client:
        await RpcInteractionDelivery(client).deliver("c", interaction)
        stub.routes["HandleCascadeUserInteraction"] = const(
            500, b'{"code":"unknown","message":"input not registered for step 4"}'
        )
        with pytest.raises(InteractionRejected) as info:
            await RpcInteractionDelivery(client).deliver("c", interaction)
    assert json.loads(stub.requests[0].body) == {"cascadeId": "c", "interaction": interaction}
    assert (info.value.status, info.value.code, info.value.message) == (
        500, "unknown", "input not registered for step 4")  # fmt: skip
    assert info.value.reason == "not_registered"  # classified where it was raised


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (500, b'{"code":"unknown","message":"input not registered for step 4"}', "not_registered"),
        (500, b'{"code":"internal","message":"busy"}', "transient"),
        (503, b"<html>overloaded</html>", "transient"),
        (429, b'{"code":"resource_exhausted","message":"slow down"}', "transient"),
        (400, b'{"code":"invalid_argument","message":"bad interaction"}', "final"),
        (404, b'{"code":"not_found","message":"cascade not found"}', "final"),
    ],
)
async def test_a_refused_answer_says_why_in_the_vocabulary(
    stub: StubServer, status: int, body: bytes, reason: str
) -> None:
    """agy's refusal is read once, in the adapter's error: the gate delivery reads only ``reason``."""
    stub.routes["HandleCascadeUserInteraction"] = const(status, body)
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(InteractionRejected) as info:
            await RpcInteractionDelivery(client).deliver("c", {"trajectoryId": "t", "stepIndex": 1})
    assert info.value.reason == reason


async def test_interaction_delivery_to_a_dead_port_is_not_a_rejection() -> None:
    async with RpcClient("https://127.0.0.1:9") as client:
        with pytest.raises(RpcUnreachable):
            await RpcInteractionDelivery(client).deliver("c", {})


async def test_turn_sender_sends_the_resolved_model(stub: StubServer) -> None:
    stub.routes["SendUserCascadeMessage"] = const(200, b"{}")

    async def model(cascade_id: str) -> str | None:
        return "MODEL_X" if cascade_id == "c" else None

    async with RpcClient(stub.base_url) as client:
        sender = RpcTurnSender(client, model)
        assert sender.name == "rpc"
        await sender.send("c", "hello\nworld")
        await sender.send("d", "no model")
    assert json.loads(stub.requests[0].body) == {
        "cascadeId": "c", "items": [{"text": "hello\nworld"}],
        "cascadeConfig": {"plannerConfig": {"planModel": "MODEL_X"}}}  # fmt: skip
    assert "cascadeConfig" not in json.loads(stub.requests[1].body)


async def test_turn_sender_404_demotes(stub: StubServer) -> None:
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(MethodMissing) as info:
            await RpcTurnSender(client, lambda _c: _none()).send("c", "hi")
        assert isinstance(info.value, SourceUnavailable)  # (MethodMissing's older name)
        stub.routes["SendUserCascadeMessage"] = const(500, b'{"code":"internal","message":"busy"}')
        with pytest.raises(RpcError) as err:
            await RpcTurnSender(client, lambda _c: _none()).send("c", "hi")
    assert not isinstance(err.value, MethodMissing)


CATALOG = [ModelInfo(model="M1"), ModelInfo(model="M2", recommended=True)]


async def test_plan_model_from_latest_user_input() -> None:
    older = fixture("user_input.json")
    newer = copy.deepcopy(older)
    newer["metadata"]["executionId"] = "e2"
    newer["userInput"]["userConfig"]["plannerConfig"]["planModel"] = "MODEL_NEWER"
    steps = [older, fixture("planner_response_text.json"), newer, fixture("checkpoint.json"), "junk"]
    catalog = FixedCatalog(CATALOG)
    assert await PlanModelResolver(MemorySnapshot(steps), catalog)("c") == "MODEL_NEWER"
    assert await PlanModelResolver(MemorySnapshot(steps[:2]), catalog)("c") == "MODEL_PLACEHOLDER_M20"
    assert catalog.calls == 0
    chosen: list[str | None] = [None]
    resolver = PlanModelResolver(MemorySnapshot(steps), catalog, choice=lambda: chosen[0])
    assert await resolver("c") == "MODEL_NEWER"  # nothing chosen: agy's plan
    chosen[0] = "MODEL_PICKED"
    assert await resolver("c") == "MODEL_PICKED"  # the user's choice (an editor's picker) wins


async def test_plan_model_falls_back_to_recommended_and_caches() -> None:
    catalog = FixedCatalog(CATALOG)
    resolver = PlanModelResolver(MemorySnapshot([fixture("planner_response_text.json")]), catalog)
    assert await resolver("c") == "M2"
    assert await resolver("c") == "M2"
    assert catalog.calls == 1
    assert (
        await PlanModelResolver(MemorySnapshot(down=True), FixedCatalog([ModelInfo(model="A")]))("c") == "A"
    )
    assert await PlanModelResolver(MemorySnapshot([]), FixedCatalog(RuntimeError("x")))("c") is None
    assert await PlanModelResolver(MemorySnapshot([]), FixedCatalog([]))("c") is None


async def test_interrupter(stub: StubServer) -> None:
    stub.routes["CancelCascadeSteps"] = const(200, b"{}")
    async with RpcClient(stub.base_url) as client:
        await RpcInterrupter(client).interrupt("c")
    assert (stub.requests[0].method, json.loads(stub.requests[0].body)) == (
        "CancelCascadeSteps",
        {"cascadeId": "c"},
    )


def test_parse_summaries_tolerant() -> None:
    answer = {
        "trajectorySummaries": {
            "new": {"status": "CASCADE_RUN_STATUS_RUNNING", "stepCount": "12", "lastUserInputTime": "2026-01-01T00:00:00Z",
                    "lastModifiedTime": "2026-01-01T00:00:05Z", "trajectoryMetadata": {"parentConversationId": "old"},
                    "rootConversationId": "root"},
            "old": {"status": "CASCADE_RUN_STATUS_IDLE", "stepCount": 3},
            "weird": "not an object",
        }
    }  # fmt: skip
    by_id = {s.cascade_id: s for s in parse_summaries(answer)}
    assert (
        by_id["new"].parent_id == "old" and by_id["new"].root_id == "root" and by_id["new"].step_count == 12
    )
    assert by_id["new"].last_modified_time == "2026-01-01T00:00:05Z"
    assert by_id["old"].status == "CASCADE_RUN_STATUS_IDLE" and by_id["old"].parent_id == ""
    assert by_id["weird"].step_count == 0
    assert parse_summaries({}) == [] and parse_summaries({"trajectorySummaries": 3}) == []
    assert [s.cascade_id for s in parse_summaries({"trajectorySummaries": [{"cascadeId": "x"}, {}]})] == ["x"]


def test_parse_models_tolerant() -> None:
    answer = {"response": {"models": {"M1": {"model": "M1", "label": "One"}, "M2": {"label": "Two", "isRecommended": True},
                                      "M3": {"model": "M3", "isRecommended": "yes"}}}}  # fmt: skip
    assert parse_models(answer) == [
        ModelInfo(model="M1", label="One"), ModelInfo(model="M2", label="Two", recommended=True), ModelInfo(model="M3")
    ]  # fmt: skip
    assert parse_models({}) == [] and parse_models({"response": {"models": [{"model": "L"}, {}]}}) == [
        ModelInfo(model="L")]  # fmt: skip


# The live shape, as the reference harness documents it (omnigent 0.19.1 antigravity_native/rpc.py,
# get_available_models: "live-verified, agy 1.0.10").
LIVE_CATALOG = {"response": {
    "models": {
        "k1": {"model": "MODEL_A", "displayName": "Gemini Flash", "recommended": False,
               "supportsThinking": True, "thinkingBudget": 1024},
        "k2": {"model": "MODEL_B", "displayName": "Gemini Pro", "recommended": True,
               "supportsThinking": True, "thinkingBudget": "-1"},
        "k3": {"model": "MODEL_C", "displayName": "Gemini Lite", "supportsThinking": False},
    },
    "defaultAgentModelId": "MODEL_C",
    "tieredModelIds": {},
}}  # fmt: skip


def test_parse_models_reads_the_live_shape() -> None:
    models = parse_models(LIVE_CATALOG)
    assert models == [
        ModelInfo(model="MODEL_A", label="Gemini Flash", supports_thinking=True, thinking_budget=1024),
        ModelInfo(model="MODEL_B", label="Gemini Pro", recommended=True, supports_thinking=True, thinking_budget=-1),
        ModelInfo(model="MODEL_C", label="Gemini Lite", default=True, supports_thinking=False),
    ]  # fmt: skip
    # without the envelope (the reference's defensive read) the same catalog
    assert parse_models(LIVE_CATALOG["response"]) == models


def test_preferred_model_is_the_default_then_the_recommended_then_the_first() -> None:
    models = parse_models(LIVE_CATALOG)
    assert preferred_model(models) == models[2]  # defaultAgentModelId
    no_default = [m.model_copy(update={"default": False}) for m in models]
    assert preferred_model(no_default) == no_default[1]  # recommended
    plain = [ModelInfo(model="X"), ModelInfo(model="Y")]
    assert preferred_model(plain) == plain[0] and preferred_model([]) is None


async def test_directory_and_catalog_over_rpc(stub: StubServer) -> None:
    stub.routes["GetAllCascadeTrajectories"] = const(200, b'{"trajectorySummaries": {"c": {"stepCount": 2}}}')
    stub.routes["GetAvailableModels"] = const(200, b'{"response": {"models": {"M": {"model": "M"}}}}')
    async with RpcClient(stub.base_url) as client:
        assert [s.cascade_id for s in await RpcCascadeDirectory(client).list_cascades()] == ["c"]
        assert await RpcModelCatalog(client).models() == [ModelInfo(model="M")]
