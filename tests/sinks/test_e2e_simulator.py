"""Issue 7's bar: a scripted conversation through the simulator arrives at the test omnigent exactly
in omnigent's wire format, and a sink outage in the middle costs nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy
from agy_harness.composition.session import open_session
from tests.integration.helpers import FAST

from .omnigent_app import OmnigentApp

TURNS = [
    "Say hello in one short sentence.",
    "run: git status",
    "Write a long story about a lighthouse keeper.",
]


def idle_count(app: OmnigentApp) -> int:
    return sum(
        1 for b in app.received if b["type"] == "external_session_status" and b["data"]["status"] == "idle"
    )


async def conversation(outage: bool) -> list[dict[str, Any]]:
    app = OmnigentApp()
    async with app.serving(), Simulator(pace=0.1) as sim:
        sink = OmnigentSink(
            app.base_url, app.session_id, retry=RetryPolicy(initial=0.01, max_delay=0.1, deadline=10)
        )
        async with open_session(port=sim.port, cascade_id=sim.cascade_id, sink=sink, options=FAST) as session:
            for n, text in enumerate(TURNS, 1):
                if text.startswith("run"):
                    await app.push_answer({"action": "accept", "content": {"allow": True}})
                await session.send(text)
                if outage and text.startswith("Write"):
                    # omnigent goes down while the reply streams, then comes back
                    await app.wait_for(
                        lambda: sum(b["type"] == "external_output_text_delta" for b in app.received) >= 8,
                        timeout=10,
                    )
                    app.fail_next = 6
                    await asyncio.sleep(0.2)
                    app.fail_mode = "drop"
                    app.fail_next = 4
                await app.wait_for(lambda n=n: idle_count(app) >= n, timeout=20)  # type: ignore[misc]
        await sink.aclose()
        failed = [h for h in app.hits if h.outcome == "failed"]
        assert bool(failed) == outage
    return app.received


def committed(bodies: list[dict[str, Any]]) -> list[str]:
    """Every non-delta body without the run's ids (a new simulator mints new uuids)."""
    out = []
    for b in bodies:
        if b["type"] in ("external_output_text_delta", "external_output_reasoning_delta"):
            continue
        data = {
            k: v
            for k, v in b["data"].items()
            if k not in ("event_id", "item_id", "call_id", "message_id", "elicitation_id")
        }
        out.append(json.dumps({"type": b["type"], "data": data}, sort_keys=True))
    return out


async def test_the_conversation_arrives_in_omnigents_wire_format_and_an_outage_costs_nothing() -> None:
    clean = await conversation(outage=False)
    bodies = await conversation(outage=True)
    assert committed(bodies) == committed(clean)
    ids = [b["data"]["event_id"] for b in bodies]
    assert len(ids) == len(set(ids))  # nothing twice, deltas included

    items = [b["data"] for b in bodies if b["type"] == "external_conversation_item"]
    assert [(i["item_type"], i.get("role")) for i in items] == [
        ("message", "user"),
        ("message", "assistant"),
        ("message", "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
        ("message", "user"),
        ("message", "assistant"),
    ]
    assert [i["content"] for i in items if i.get("role") == "user"] == TURNS
    call, output = items[3], items[4]
    assert call["name"] == "run_command" and json.loads(call["arguments"])["CommandLine"] == "git status"
    assert output["call_id"] == call["call_id"] and "On branch main" in output["output"]

    # text deltas: monotonic index per message, one final, and they spell the committed message
    for message in (i for i in items if i.get("role") == "assistant"):
        deltas = [
            b["data"]
            for b in bodies
            if b["type"] == "external_output_text_delta" and b["data"]["message_id"] == message["message_id"]
        ]
        if deltas:
            assert [d["index"] for d in deltas] == list(range(len(deltas)))
            assert [d["final"] for d in deltas] == [False] * (len(deltas) - 1) + [True]
            assert "".join(d["delta"] for d in deltas) == message["content"]
    assert any(b["type"] == "external_output_reasoning_delta" and b["data"]["started"] for b in bodies)

    statuses = [b["data"]["status"] for b in bodies if b["type"] == "external_session_status"]
    assert statuses == ["running", "idle"] * 3
    usage = [b["data"] for b in bodies if b["type"] == "external_session_usage"]
    totals = [u["cumulative_input_tokens"] for u in usage]
    assert totals == sorted(totals) and set(usage[0]) == {
        "cumulative_input_tokens",
        "cumulative_output_tokens",
        "cumulative_cache_read_input_tokens",
        "model",
        "event_id",
    }
    assert [b["data"]["model"] for b in bodies if b["type"] == "external_model_change"] == [
        "MODEL_PLACEHOLDER_M20"
    ]
    resolved = [b["data"]["elicitation_id"] for b in bodies if b["type"] == "external_elicitation_resolved"]
    assert len(resolved) == 1
