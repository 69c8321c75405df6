"""The fake omnigent (tests/sinks/omnigent_app.py, kept for fault injection) accepts and refuses exactly
what the REAL omnigent 0.19.1 does, for every body the omnigent sink sends and for malformed ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agy_harness.adapters.sinks.omnigent import elicitation_id, gate_params, to_wire
from tests.real_omnigent import create_session
from tests.sinks.omnigent_app import OmnigentApp
from tests.sinks.samples import PERMISSION_GATE, QUESTION_GATE, SAMPLES

from .helpers import Omnigent

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _item(**data: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "item_type": "message",
        "item_data": {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        "source_id": "contract/1",
    }
    return {"type": "external_conversation_item", "data": {**base, **data}}


ERROR_ITEM = {"source": "harness", "code": "agy_answer_refused", "message": "refused"}
SENT: list[tuple[str, Any]] = [
    *((f"sample {e.type}", to_wire(e)) for e in SAMPLES if e.type not in ("gate_opened", "subagent")),
    ("waiting", {"type": "external_session_status", "data": {"status": "waiting", "blocked_on": "Allow?"}}),
    ("running", {"type": "external_session_status", "data": {"status": "running"}}),
    ("child idle", {"type": "subagent.status", "data": {"idle": True}}),
    ("error item", _item(item_type="error", item_data=ERROR_ITEM)),
    ("batch", [_item(source_id=f"contract/b{n}") for n in range(3)]),
    ("card closed", {"type": "approval", "data": {"elicitation_id": "elicit_agy_x", "action": "cancel"}}),
]
MALFORMED: list[tuple[str, Any]] = [
    (
        "no item_data",
        {"type": "external_conversation_item", "data": {"item_type": "message", "role": "user"}},
    ),
    ("unknown item type", _item(item_type="thought")),
    ("long source_id", _item(source_id="x" * 257)),
    ("blank source_id", _item(source_id=" ")),
    ("empty message_id", _item(message_id="")),
    ("assistant without agent", _item(item_data={"role": "assistant", "content": []})),
    ("error without message", _item(item_type="error", item_data={**ERROR_ITEM, "message": ""})),
    ("error of another source", _item(item_type="error", item_data={**ERROR_ITEM, "source": "agy"})),
    ("paused", {"type": "external_session_status", "data": {"status": "paused"}}),
    ("child idle false", {"type": "subagent.status", "data": {"idle": False}}),
    ("usage without fields", {"type": "external_session_usage", "data": {"model": "m"}}),
    ("negative usage", {"type": "external_session_usage", "data": {"cumulative_input_tokens": -1}}),
    ("blank model", {"type": "external_model_change", "data": {"model": " "}}),
    ("delta not text", {"type": "external_output_text_delta", "data": {"delta": 3}}),
    ("resolved without id", {"type": "external_elicitation_resolved", "data": {}}),
    (
        "sub-agent without cascade",
        {"type": "external_antigravity_subagent_start", "data": {"cascade_id": ""}},
    ),
    ("unknown type", {"type": "external_thing", "data": {}}),
    ("no data", {"type": "external_session_status"}),
    ("empty batch", []),
    ("batch of 101", [_item(source_id=f"contract/c{n}") for n in range(101)]),
    ("bad body in a batch", [_item(source_id="contract/d1"), _item(item_type="thought")]),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def both(omnigent_server: str) -> AsyncIterator[tuple[Omnigent, str, OmnigentApp]]:
    real = Omnigent(omnigent_server)
    sid = await asyncio.to_thread(create_session, omnigent_server)
    fake = OmnigentApp()
    async with fake.serving():
        yield real, sid, fake
    await real.aclose()


@pytest.mark.parametrize(("label", "body"), SENT + MALFORMED, ids=[label for label, _ in SENT + MALFORMED])
async def test_the_fake_answers_every_body_like_the_real_server(
    both: tuple[Omnigent, str, OmnigentApp], label: str, body: Any
) -> None:
    real, sid, fake = both
    real_status = (await real.post_event(sid, body)).status_code
    async with httpx.AsyncClient() as client:
        fake_status = (
            await client.post(f"{fake.base_url}/v1/sessions/{fake.session_id}/events", json=body)
        ).status_code
    assert real_status // 100 == fake_status // 100, (label, real_status, fake_status)
    assert real_status // 100 == (2 if (label, body) in SENT else 4), (label, real_status)


@pytest.mark.parametrize("gate", [PERMISSION_GATE, QUESTION_GATE], ids=["permission", "question"])
async def test_the_hook_parks_the_sinks_params_on_both(
    both: tuple[Omnigent, str, OmnigentApp], gate: Any
) -> None:
    real, _, fake = both
    sid = await asyncio.to_thread(create_session, real.base_url)  # no earlier "resolved" for this gate
    body = {"elicitation_id": elicitation_id(gate.gate_id), "params": gate_params(gate)}
    hook = f"/v1/sessions/{sid}/hooks/antigravity-elicitation-request"
    parked = asyncio.create_task(real.http.post(hook, json=body, timeout=60))
    card = await real.wait_pending(sid)
    assert card["elicitation_id"] == body["elicitation_id"] and not parked.done()
    assert (await real.resolve(sid, card["elicitation_id"], {"action": "decline"})).status_code == 202
    assert (await parked).json()["action"] == "decline"
    async with httpx.AsyncClient() as client:
        fake_hook = f"{fake.base_url}/v1/sessions/{fake.session_id}/hooks/antigravity-elicitation-request"
        await fake.push_answer({"action": "decline"}, body["elicitation_id"])
        assert (await client.post(fake_hook, json=body)).json()["action"] == "decline"


async def test_a_hook_body_without_a_message_is_refused_by_both(
    both: tuple[Omnigent, str, OmnigentApp],
) -> None:
    real, sid, fake = both
    body = {"elicitation_id": "elicit_agy_x", "params": {"mode": "form"}}
    real_status = (
        await real.http.post(f"/v1/sessions/{sid}/hooks/antigravity-elicitation-request", json=body)
    ).status_code
    async with httpx.AsyncClient() as client:
        fake_hook = f"{fake.base_url}/v1/sessions/{fake.session_id}/hooks/antigravity-elicitation-request"
        fake_status = (await client.post(fake_hook, json=body)).status_code
    assert real_status // 100 == fake_status // 100 == 4
