"""The omnigent sink's behaviour under faults and on the hook (the FAKE omnigent of omnigent_app.py:
503s, dropped connections, refusals, empty 200s). Its mapping and the reading of answers (pure) are in
test_omnigent_cards.py; what the real omnigent 0.19.1 stores and renders is tested in
tests/omnigent_real/."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from agy_harness.adapters.sinks.omnigent import (
    OmnigentRejected,
    OmnigentSink,
    RetryPolicy,
    elicitation_id,
    to_wire,
)
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateWithdrawn,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    UserMessage,
)
from agy_harness.ports.protocols import EventSink
from tests.fakes import FakeClock

from .omnigent_app import OmnigentApp
from .samples import PERMISSION_GATE, QUESTION_GATE, SAMPLES, C

FAST = RetryPolicy(initial=0.01, max_delay=0.05, deadline=3.0)


def make_sink(app: OmnigentApp, **kw: Any) -> OmnigentSink:
    kw.setdefault("retry", FAST)
    return OmnigentSink(app.base_url, app.session_id, **kw)


def expected_bodies(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [
        b
        for e in events
        if (b := to_wire(e)) is not None and b["type"] != "external_antigravity_subagent_start"
    ]


def user(n: int) -> UserMessage:
    return UserMessage(id=f"t/u:{n}/user", cascade_id=C, step_key=f"t/u:{n}", text=f"message {n}")


async def deliver_all(sink: EventSink, events: Sequence[Event]) -> int:
    """What the harness does: re-deliver the unaccepted suffix until everything is accepted."""
    pending = list(events)
    calls = 0
    while pending:
        calls += 1
        pending = pending[await sink.deliver(pending) :]
        if pending:
            await asyncio.sleep(0.02)
    return calls


# -- delivery under faults (the fake) -------------------------------------------------------------


async def test_delivers_everything_in_order_batching_items(omnigent: OmnigentApp) -> None:
    events = [user(n) for n in range(5)] + [StatusChanged(id="t/s/idle", cascade_id=C, status="idle")]
    async with make_sink(omnigent) as sink:
        assert await sink.deliver(events) == 6
    assert omnigent.received == expected_bodies(events)
    posts = [h for h in omnigent.hits if h.path.endswith("/events")]
    assert len(posts) == 1 and isinstance(posts[0].body, list) and len(posts[0].body) == 6


@pytest.mark.parametrize("mode", ["503", "drop"])
async def test_outage_of_n_requests_loses_and_duplicates_nothing(omnigent: OmnigentApp, mode: str) -> None:
    events = [e for e in SAMPLES if e.type not in ("gate_opened", "subagent", "text_delta")]
    omnigent.fail_mode = mode  # type: ignore[assignment]
    omnigent.fail_next = 4
    async with make_sink(omnigent) as sink:
        await deliver_all(sink, events)
    assert omnigent.received == expected_bodies(events)
    failed_posts = sum(h.outcome == "failed" and h.method == "POST" for h in omnigent.hits)
    assert failed_posts > 0 and sink.stats.retries == failed_posts


async def test_outage_longer_than_the_deadline_returns_the_accepted_prefix(omnigent: OmnigentApp) -> None:
    events = [StatusChanged(id=f"t/{n}/status", cascade_id=C, status="running") for n in range(3)]
    async with make_sink(omnigent, retry=RetryPolicy(initial=0.01, max_delay=0.02, deadline=0.1)) as sink:
        assert await sink.deliver(events[:1]) == 1
        omnigent.fail_next = 1000
        assert await sink.deliver(events[1:]) == 0
        omnigent.fail_next = 0
        assert await sink.deliver(events[1:]) == 2
    assert sink.stats.gave_up == 1 and len(omnigent.received) == 3


async def test_retry_after_is_honoured(omnigent: OmnigentApp) -> None:
    clock = FakeClock()
    omnigent.fail_next, omnigent.retry_after = 1, 0.04
    async with make_sink(omnigent, clock=clock) as sink:
        assert await sink.deliver([user(1)]) == 1
    assert clock.waited and clock.waited[0] >= 0.04


async def test_a_batch_with_one_bad_body_stores_the_others(omnigent: OmnigentApp) -> None:
    events = [user(n) for n in range(4)]
    omnigent.reject = lambda body: 400 if "message 2" in json.dumps(body) else None
    async with make_sink(omnigent) as sink:
        assert await sink.deliver(events) == 4
    assert omnigent.source_ids() == [events[0].id, events[1].id, events[0].id, events[1].id, events[3].id]
    assert sink.stats.dropped == 1 and sink.stats.rejected_bodies == [events[2].id]


@pytest.mark.parametrize("status", [401, 404])
async def test_auth_or_route_errors_hold_the_stream(omnigent: OmnigentApp, status: int) -> None:
    omnigent.reject = lambda body: status
    async with make_sink(omnigent) as sink:
        assert await sink.deliver([user(1), user(2)]) == 0
    assert sink.stats.held == 1 and sink.stats.dropped == 0


async def test_concurrent_deliveries_keep_their_order(omnigent: OmnigentApp) -> None:
    events = [StatusChanged(id=f"t/{n}/s", cascade_id=C, status="running") for n in range(6)]
    async with make_sink(omnigent) as sink:
        await asyncio.gather(*(sink.deliver([e]) for e in events))
    assert omnigent.received == expected_bodies(events)


async def test_deltas_of_a_message_committed_in_the_same_delivery_are_not_posted(
    omnigent: OmnigentApp,
) -> None:
    delta = TextDelta(id="t/2/d/0", cascade_id=C, delta="Hel", message_id="m", index=0, final=True)
    message = AssistantMessage(id="t/2/text", cascade_id=C, text="Hel", message_id="m")
    async with make_sink(omnigent) as sink:
        assert await sink.deliver([delta, message]) == 2  # a backlog: the item says it all
        assert await sink.deliver([delta]) == 1  # late: its message is already stored
    assert [b["type"] for b in omnigent.received] == ["external_conversation_item"]


async def test_a_sub_agents_events_go_to_its_child_session(omnigent: OmnigentApp) -> None:
    start = SubagentStarted(id="t/5/sub", cascade_id=C, child_cascade_id="kid", parent_call_id="t/5")
    kid = [
        UserMessage(id="k/u:1/user", cascade_id="kid", text="review"),
        StatusChanged(id="k/9/status/failed", cascade_id="kid", status="failed", reason="boom"),
    ]
    async with make_sink(omnigent) as sink:
        assert await sink.deliver([user(1), start, *kid]) == 4
        assert sink.child_session("kid") == "child-kid"
    assert omnigent.source_ids() == [user(1).id]
    child = omnigent.child_received["child-kid"]
    assert [b["type"] for b in child] == ["external_conversation_item"] * 2 + ["subagent.status"]
    assert child[1]["data"]["item_data"]["message"] == "boom"  # a child's failure: visible, then idle


# -- gates on the hook (the fake) ------------------------------------------------------------------


async def test_ask_waits_then_returns_the_web_answer(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        ask = asyncio.create_task(sink.ask(QUESTION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        post = omnigent.hook_posts[0]
        assert post["elicitation_id"] == elicitation_id(QUESTION_GATE.gate_id)
        await omnigent.push_answer({"action": "accept", "content": {"0": "Backend", "1": ["Unit"]}})
        answer = await asyncio.wait_for(ask, 30)
    assert answer.selections == (("1",), ("1",))  # the labels clicked, read as their options (Backend, Unit)
    statuses = [b["data"] for b in omnigent.received if b["type"] == "external_session_status"]
    assert statuses == [
        {"status": "waiting", "blocked_on": "Which part first?\nWhich tests?"},
        {"status": "running"},
    ]


async def test_an_empty_200_is_no_answer_yet(omnigent: OmnigentApp) -> None:
    omnigent.empty_next = 3  # omnigent's timeout / resolved elsewhere, three times over
    async with make_sink(omnigent) as sink:
        ask = asyncio.create_task(sink.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 4)
        await omnigent.push_answer({"action": "accept"})
        answer = await asyncio.wait_for(ask, 30)
    assert answer.allow is True and sink.stats.empty_answers == 3
    assert {p["elicitation_id"] for p in omnigent.hook_posts} == {elicitation_id(PERMISSION_GATE.gate_id)}


async def _refuse(omnigent: OmnigentApp, bad: str) -> str:
    """A sink (a fresh process) gets a permission answer it must refuse, then a decline: the
    refusal item's source_id."""
    eid = elicitation_id(PERMISSION_GATE.gate_id)
    omnigent.received.clear()
    async with make_sink(omnigent) as sink:
        ask = asyncio.create_task(sink.ask(PERMISSION_GATE))
        await omnigent.push_answer({"action": "accept", "content": {"allow": bad}}, eid)
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) >= 2)
        await omnigent.push_answer({"action": "decline"}, eid)
        answer = await asyncio.wait_for(ask, 30)
    assert answer.allow is False and sink.stats.refused_answers == 1
    [refusal] = [b for b in omnigent.received if b["type"] == "external_conversation_item"]
    assert "refused" in refusal["data"]["item_data"]["message"]
    return str(refusal["data"]["source_id"])


async def test_a_refused_answer_is_shown_and_asked_again(omnigent: OmnigentApp) -> None:
    assert await _refuse(omnigent, "maybe")


async def test_a_refusal_item_id_names_what_was_refused(omnigent: OmnigentApp) -> None:
    """Its source_id is the same for the same refused answer after a restart (a new sink), and
    differs for a different one: never a counter that starts again."""
    first = await _refuse(omnigent, "maybe")
    omnigent.hook_posts.clear()
    again = await _refuse(omnigent, "maybe")
    omnigent.hook_posts.clear()
    other = await _refuse(omnigent, "perhaps")
    assert again == first and other != first


async def test_hook_permanent_rejection_raises(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        omnigent.session_id = "gone"  # the sink's session is not there any more: 404
        with pytest.raises(OmnigentRejected):
            await asyncio.wait_for(sink.ask(PERMISSION_GATE), 30)


async def test_withdraw_cancels_the_ask_and_resolves_once(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        ask = asyncio.create_task(sink.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        await sink.withdraw(PERMISSION_GATE.gate_id)
        with pytest.raises(asyncio.CancelledError):
            await ask
        withdrawn = GateWithdrawn(id="t1/9/w", cascade_id=C, gate_id=PERMISSION_GATE.gate_id)
        assert await sink.deliver([withdrawn]) == 1
    resolved = [b for b in omnigent.received if b["type"] == "external_elicitation_resolved"]
    assert resolved == [
        {
            "type": "external_elicitation_resolved",
            "data": {"elicitation_id": elicitation_id(PERMISSION_GATE.gate_id)},
        }
    ]
    assert [b["data"]["status"] for b in omnigent.received if b["type"] == "external_session_status"] == [
        "waiting",
        "running",
    ]
