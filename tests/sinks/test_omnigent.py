from __future__ import annotations

import asyncio
import json
import logging
import typing
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from agy_harness.adapters.sinks.omnigent import (
    OmnigentProtocolError,
    OmnigentRejected,
    OmnigentSink,
    RetryPolicy,
    gate_params,
    parse_gate_response,
    to_wire,
)
from agy_harness.ports.events import Event, GateWithdrawn, Rotation, StatusChanged, TextDelta
from agy_harness.ports.protocols import EventSink, GateAnswer

from .omnigent_app import OmnigentApp
from .samples import PERMISSION_GATE, QUESTION_GATE, SAMPLES

FAST = RetryPolicy(initial=0.01, max_delay=0.05, deadline=3.0)


def make_sink(app: OmnigentApp, **kw: Any) -> OmnigentSink:
    kw.setdefault("retry", FAST)
    return OmnigentSink(app.base_url, app.session_id, **kw)


def expected_bodies(events: Sequence[Event]) -> list[dict[str, Any]]:
    status = "idle"
    out = []
    for e in events:
        body = to_wire(e, status=status)  # type: ignore[arg-type]
        if isinstance(e, StatusChanged):
            status = e.status
        if body is not None:
            out.append(body)
    return out


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


# -- the mapping (pure) ------------------------------------------------------------------------------

WIRE: dict[str, dict[str, Any] | None] = {
    "user_message": {
        "type": "external_conversation_item",
        "data": {
            "item_type": "message",
            "role": "user",
            "content": "hello there",
            "item_id": "t1/x:e1/user",
            "event_id": "t1/x:e1/user",
        },
    },
    "status": {
        "type": "external_session_status",
        "data": {"status": "running", "event_id": "t1/1/status/running"},
    },
    "model_change": {"type": "external_model_change", "data": {"model": "MODEL_X", "event_id": "t1/1/model"}},
    "reasoning_delta": {
        "type": "external_output_reasoning_delta",
        "data": {"delta": "Thinking", "started": True, "event_id": "t1/2/reasoning/0"},
    },
    "text_delta": {
        "type": "external_output_text_delta",
        "data": {
            "delta": "Hel",
            "message_id": "t1/2",
            "index": 0,
            "final": False,
            "event_id": "t1/2/delta/0",
        },
    },
    "assistant_message": {
        "type": "external_conversation_item",
        "data": {
            "item_type": "message",
            "role": "assistant",
            "content": "Hello!",
            "item_id": "t1/2/text",
            "message_id": "t1/2",
            "event_id": "t1/2/text",
        },
    },
    "tool_call": {
        "type": "external_conversation_item",
        "data": {
            "item_type": "function_call",
            "call_id": "t1/3",
            "name": "run_command",
            "arguments": '{"CommandLine": "ls -la", "Cwd": "/tmp/é"}',
            "item_id": "t1/3/call",
            "event_id": "t1/3/call",
        },
    },
    "tool_result": {
        "type": "external_conversation_item",
        "data": {
            "item_type": "function_call_output",
            "call_id": "t1/3",
            "output": "total 0\n",
            "item_id": "t1/3/result",
            "event_id": "t1/3/result",
        },
    },
    "usage": {
        "type": "external_session_usage",
        "data": {
            "cumulative_input_tokens": 120,
            "cumulative_output_tokens": 30,
            "cumulative_cache_read_input_tokens": 7,
            "model": "MODEL_X",
            "event_id": "t1/3/usage",
        },
    },
    "gate_opened": None,
    "gate_withdrawn": {
        "type": "external_elicitation_resolved",
        "data": {"elicitation_id": "gate-t1-9", "event_id": "t1/9/gate/withdrawn"},
    },
    "notice": None,
    "subagent": None,
    "rotation": {
        "type": "external_session_status",
        "data": {
            "status": "idle",
            "rotation": {"old_cascade_id": "cascade-1", "new_cascade_id": "cascade-2"},
            "event_id": "c1/rotation/c2",
        },
    },
}


def test_samples_cover_every_event_type() -> None:
    union = typing.get_args(typing.get_args(Event)[0])
    declared = {cls.model_fields["type"].default for cls in union}
    assert declared == {e.type for e in SAMPLES} == set(WIRE)


@pytest.mark.parametrize(
    "event", [e for e in SAMPLES if e.id != "t1/4/status/idle" and e.id != "t1/2/delta/1"]
)
def test_to_wire(event: Event) -> None:
    assert to_wire(event) == WIRE[event.type]


def test_to_wire_final_delta_and_json_arguments() -> None:
    final = next(e for e in SAMPLES if isinstance(e, TextDelta) and e.final)
    assert to_wire(final) == {
        "type": "external_output_text_delta",
        "data": {"delta": "lo!", "message_id": "t1/2", "index": 1, "final": True, "event_id": "t1/2/delta/1"},
    }
    call = to_wire(SAMPLES[7])
    assert call is not None
    assert json.loads(call["data"]["arguments"]) == {"CommandLine": "ls -la", "Cwd": "/tmp/é"}


def test_rotation_repeats_the_given_status() -> None:
    rotation = next(e for e in SAMPLES if isinstance(e, Rotation))
    body = to_wire(rotation, status="running")
    assert body is not None and body["data"]["status"] == "running"


# -- delivery ----------------------------------------------------------------------------------------


async def test_delivers_everything_in_order_with_ids(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        assert isinstance(sink, EventSink)
        assert await sink.deliver(SAMPLES) == len(SAMPLES)
    assert omnigent.received == expected_bodies(SAMPLES)
    # the rotation repeats the status last delivered before it ("running"), not a made-up one
    rotation = next(b for b in omnigent.received if "rotation" in b["data"])
    assert rotation["data"]["status"] == "running"
    keys = [h.headers.get("idempotency-key") for h in omnigent.hits]
    assert keys == [b["data"]["event_id"] for b in omnigent.received]
    assert sink.stats.posted == len(omnigent.received) and sink.stats.not_posted == 3


async def test_token_is_sent(omnigent: OmnigentApp) -> None:
    omnigent.token = "s3cret"
    async with make_sink(omnigent, token="s3cret") as sink:
        assert await sink.deliver(SAMPLES[:3]) == 3
    assert len(omnigent.received) == 3


@pytest.mark.parametrize("mode", ["503", "drop"])
async def test_outage_of_n_requests_loses_and_duplicates_nothing(omnigent: OmnigentApp, mode: str) -> None:
    omnigent.fail_mode = mode  # type: ignore[assignment]
    async with make_sink(omnigent) as sink:
        assert await sink.deliver(SAMPLES[:4]) == 4
        omnigent.fail_next = 5
        assert await sink.deliver(SAMPLES[4:]) == len(SAMPLES) - 4
    assert omnigent.received == expected_bodies(SAMPLES)
    assert len(set(omnigent.event_ids())) == len(omnigent.event_ids())
    assert sink.stats.retries == 5
    assert sum(h.outcome == "failed" for h in omnigent.hits) == 5


async def test_outage_longer_than_the_deadline_returns_the_accepted_prefix(omnigent: OmnigentApp) -> None:
    short = RetryPolicy(initial=0.01, max_delay=0.02, deadline=0.1)
    async with make_sink(omnigent, retry=short) as sink:
        assert await sink.deliver(SAMPLES[:3]) == 3
        omnigent.outage_until = asyncio.get_running_loop().time() + 0.6
        assert await sink.deliver(SAMPLES[3:]) == 0  # nothing accepted while omnigent is down
        assert sink.stats.gave_up == 1
        calls = await deliver_all(sink, SAMPLES[3:])  # the harness keeps re-delivering the suffix
    assert calls >= 2
    assert omnigent.received == expected_bodies(SAMPLES)
    assert len(set(omnigent.event_ids())) == len(omnigent.event_ids())


async def test_outage_window_within_the_deadline_is_absorbed(omnigent: OmnigentApp) -> None:
    omnigent.fail_mode = "drop"
    omnigent.outage_until = asyncio.get_running_loop().time() + 0.3
    async with make_sink(omnigent) as sink:
        assert await sink.deliver(SAMPLES) == len(SAMPLES)
    assert omnigent.received == expected_bodies(SAMPLES)
    assert sink.stats.retries >= 1


async def test_connect_errors_are_retried() -> None:
    app = OmnigentApp()
    async with app.serving():
        port = app.port
    # nothing listens on the port now; bring the app back on the same port while the sink retries
    sink = OmnigentSink(f"http://127.0.0.1:{port}", app.session_id, retry=FAST)
    app2 = OmnigentApp()
    task = asyncio.ensure_future(sink.deliver(SAMPLES[:2]))
    await asyncio.sleep(0.1)
    assert not task.done()
    from hypercorn.config import Config

    original = Config.create_sockets

    def same_port(self: Config) -> Any:
        self.bind = [f"127.0.0.1:{port}"]
        return original(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Config, "create_sockets", same_port)
        async with app2.serving():
            assert await asyncio.wait_for(task, 5) == 2
    await sink.aclose()
    assert app2.received == expected_bodies(SAMPLES[:2])
    assert sink.stats.retries >= 1


async def test_retry_after_is_honoured_and_capped(omnigent: OmnigentApp) -> None:
    omnigent.retry_after = 30.0  # capped at max_delay
    omnigent.fail_next = 1
    slept: list[float] = []

    class Clock:
        def monotonic(self) -> float:
            return asyncio.get_running_loop().time()

        async def sleep(self, seconds: float) -> None:
            slept.append(seconds)

    async with make_sink(omnigent, clock=Clock()) as sink:
        assert await sink.deliver(SAMPLES[:1]) == 1
    assert slept == [FAST.max_delay]


async def test_permanent_rejection_skips_that_event_only(
    omnigent: OmnigentApp, caplog: pytest.LogCaptureFixture
) -> None:
    bad = SAMPLES[7]  # the tool call
    omnigent.reject = lambda body: 422 if body["data"]["event_id"] == bad.id else None
    caplog.set_level(logging.ERROR, "agy_harness.adapters.sinks.omnigent")
    async with make_sink(omnigent) as sink:
        assert await sink.deliver(SAMPLES) == len(SAMPLES)
    assert omnigent.received == [b for b in expected_bodies(SAMPLES) if b["data"]["event_id"] != bad.id]
    assert sink.stats.dropped == 1 and sink.stats.rejected_bodies == [bad.id]
    assert sink.stats.retries == 0  # rejected once, not retried
    assert any(bad.id in r.getMessage() and "422" in r.getMessage() for r in caplog.records)


async def test_409_counts_as_already_delivered(omnigent: OmnigentApp) -> None:
    omnigent.reject = lambda body: 409 if body["type"] == "external_model_change" else None
    async with make_sink(omnigent) as sink:
        assert await sink.deliver(SAMPLES[:4]) == 4
        assert sink.stats.duplicates == 1 and sink.stats.dropped == 0


async def test_auth_or_route_errors_hold_the_stream_instead_of_dropping(
    omnigent: OmnigentApp, caplog: pytest.LogCaptureFixture
) -> None:
    omnigent.token = "right"
    caplog.set_level(logging.ERROR, "agy_harness.adapters.sinks.omnigent")
    async with make_sink(omnigent, token="wrong") as sink:
        assert await sink.deliver(SAMPLES[:3]) == 0
        assert await sink.deliver(SAMPLES[:3]) == 0
        assert sink.stats.held == 2 and sink.stats.dropped == 0
    assert omnigent.received == []
    assert any("401" in r.getMessage() for r in caplog.records)
    omnigent.token = None  # fixed: everything still arrives
    async with make_sink(omnigent) as sink:
        assert await sink.deliver(SAMPLES[:3]) == 3
    assert omnigent.received == expected_bodies(SAMPLES[:3])


async def test_concurrent_deliveries_keep_their_order(omnigent: OmnigentApp) -> None:
    omnigent.fail_next = 2
    async with make_sink(omnigent) as sink:
        a, b = await asyncio.gather(sink.deliver(SAMPLES[:5]), sink.deliver(SAMPLES[5:]))
    assert (a, b) == (5, len(SAMPLES) - 5)
    assert omnigent.received == expected_bodies(SAMPLES)


async def test_works_over_asgi_transport_too() -> None:
    app = OmnigentApp()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))  # type: ignore[arg-type]
    sink = OmnigentSink("http://omnigent", app.session_id, client=client, retry=FAST)
    assert await sink.deliver(SAMPLES) == len(SAMPLES)
    await sink.aclose()
    assert not client.is_closed  # a given client is not ours to close
    await client.aclose()
    assert app.received == expected_bodies(SAMPLES)


# -- gates ---------------------------------------------------------------------------------------------


def test_gate_params_render_a_question_form() -> None:
    params = gate_params(QUESTION_GATE)
    assert params["kind"] == "question" and params["permission"] is None
    assert params["gate_id"] == "gate-t1-7" and params["step_index"] == 7
    assert params["questions"] == [
        {
            "field": "q0",
            "question": "Which part first?",
            "options": [{"id": "1", "text": "Backend"}, {"id": "2", "text": "Frontend"}],
            "multi_select": False,
            "allow_write_in": True,
        },
        {
            "field": "q1",
            "question": "Which tests?",
            "options": [{"id": "1", "text": "Unit"}, {"id": "2", "text": "Integration"}],
            "multi_select": True,
            "allow_write_in": True,
        },
    ]
    perm = gate_params(PERMISSION_GATE)
    assert perm["kind"] == "permission"
    assert perm["permission"]["command_line"] == "git status" and perm["permission"]["cwd"] == "/repo"
    assert perm["message"] == "Allow `git status` in /repo?"
    assert [o["id"] for o in perm["questions"][0]["options"]] == ["allow", "deny"]


@pytest.mark.parametrize(
    ("payload", "answer"),
    [
        (
            {"action": "accept", "content": {"answers": [["1"], ["1", "2"]]}},
            GateAnswer(selections=(("1",), ("1", "2"))),
        ),
        (
            {"action": "accept", "content": {"answers": ["Backend", ["Unit"]]}},
            GateAnswer(selections=(("Backend",), ("Unit",))),
        ),
        (
            {
                "action": "accept",
                "content": {"Which part first?": "Frontend", "which  TESTS?": ["Unit", "E2E"]},
            },
            GateAnswer(selections=(("Frontend",), ("Unit", "E2E"))),
        ),
        ({"action": "accept", "content": {"q1": "2"}}, GateAnswer(selections=((), ("2",)))),
        (
            {"action": "accept", "content": {"answers": [["1"]], "write_ins": ["also docs"]}},
            GateAnswer(selections=(("1",),), write_ins=("also docs",)),
        ),
        ({"action": "accept"}, GateAnswer(selections=((), ()))),
        ({"action": "decline", "content": {"answers": [["1"]]}}, GateAnswer(action="decline")),
        ({"action": "cancel"}, GateAnswer(action="cancel")),
    ],
)
def test_parse_question_answers(payload: dict[str, Any], answer: GateAnswer) -> None:
    assert parse_gate_response(QUESTION_GATE, payload) == answer


@pytest.mark.parametrize(
    ("payload", "allow", "action"),
    [
        ({"action": "accept", "content": {"allow": True}}, True, "accept"),
        ({"action": "accept", "content": {"allow": False}}, False, "accept"),
        ({"action": "accept", "content": {"allow": "deny"}}, False, "accept"),
        ({"action": "accept", "content": {"answers": [["deny"]]}}, False, "accept"),
        ({"action": "accept", "content": {"Allow `git status` in /repo?": "Allow"}}, True, "accept"),
        ({"action": "accept"}, True, "accept"),
        ({"action": "accept", "content": {}}, True, "accept"),
        ({"action": "decline"}, False, "decline"),
        ({"action": "cancel", "content": {"allow": True}}, False, "cancel"),
    ],
)
def test_parse_permission_answers(payload: dict[str, Any], allow: bool, action: str) -> None:
    assert parse_gate_response(PERMISSION_GATE, payload) == GateAnswer(action=action, allow=allow)


@pytest.mark.parametrize(
    "payload",
    [
        [],
        {"action": "maybe"},
        {"action": "accept", "content": {"allow": "perhaps"}},
        {"action": "accept", "content": 3},
    ],
)
def test_parse_rejects_what_it_cannot_read(payload: Any) -> None:
    gate = PERMISSION_GATE if isinstance(payload, dict) and "allow" in str(payload) else QUESTION_GATE
    with pytest.raises(OmnigentProtocolError):
        parse_gate_response(gate, payload)


async def test_ask_returns_the_pushed_answer(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        await omnigent.push_answer(
            {"action": "accept", "content": {"answers": [["2"], ["1", "Integration"]]}}
        )
        answer = await asyncio.wait_for(sink.ask(QUESTION_GATE), 5)
    assert answer == GateAnswer(selections=(("2",), ("1", "Integration")))
    assert omnigent.hook_posts == [{"elicitation_id": "gate-t1-7", "params": gate_params(QUESTION_GATE)}]


async def test_ask_permission_deny(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        task = asyncio.ensure_future(sink.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        assert not task.done()  # parked until the human answers
        await omnigent.push_answer({"action": "accept", "content": {"allow": False}}, "gate-t1-9")
        assert await asyncio.wait_for(task, 5) == GateAnswer(allow=False)


async def test_long_poll_reconnects_with_the_same_elicitation_id(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent, poll_timeout=0.15) as sink:  # the client's read timeout ends each hold
        task = asyncio.ensure_future(sink.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) >= 3)
        omnigent.fail_next = 2  # and the next two reconnects fail outright
        await omnigent.wait_for(lambda: sum(h.outcome == "failed" for h in omnigent.hits) == 2)
        await omnigent.push_answer({"action": "accept", "content": {"allow": True}})
        assert await asyncio.wait_for(task, 5) == GateAnswer(allow=True)
    assert {p["elicitation_id"] for p in omnigent.hook_posts} == {"gate-t1-9"}
    assert len(omnigent.hook_posts) >= 4
    assert sink.stats.reconnects >= 5
    assert sum(h.outcome == "disconnected" for h in omnigent.hits) >= 3


async def test_long_poll_repolls_on_204(omnigent: OmnigentApp) -> None:
    omnigent.hold = 0.05
    async with make_sink(omnigent) as sink:
        task = asyncio.ensure_future(sink.ask(QUESTION_GATE))
        await omnigent.wait_for(lambda: sum(h.outcome == "repoll" for h in omnigent.hits) >= 2)
        await omnigent.push_answer({"action": "cancel"}, "gate-t1-7")
        assert await asyncio.wait_for(task, 5) == GateAnswer(action="cancel")


async def test_hook_permanent_rejection_raises(omnigent: OmnigentApp) -> None:
    sink = OmnigentSink(omnigent.base_url, "no-such-session", retry=FAST)
    with pytest.raises(OmnigentRejected) as info:
        await asyncio.wait_for(sink.ask(QUESTION_GATE), 5)
    assert info.value.status == 404
    await sink.aclose()


async def test_withdraw_cancels_the_ask_and_resolves_once(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        task = asyncio.ensure_future(sink.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        await sink.withdraw("gate-t1-9")
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        await omnigent.wait_for(lambda: any(h.outcome == "disconnected" for h in omnigent.hits))
        assert omnigent.received == [
            {
                "type": "external_elicitation_resolved",
                "data": {"elicitation_id": "gate-t1-9", "event_id": "gate-t1-9/resolved"},
            }
        ]
        # the harness's GateWithdrawn for the same gate is accepted without a second resolution
        withdrawn = GateWithdrawn(id="t1/9/gate/withdrawn", cascade_id="c", gate_id="gate-t1-9")
        assert await sink.deliver([withdrawn]) == 1
        await sink.withdraw("gate-t1-9")
    assert len(omnigent.received) == 1


async def test_cancelling_ask_from_outside_ends_the_long_poll(omnigent: OmnigentApp) -> None:
    """The harness withdraws a gate by cancelling the ask; the long-poll connection must go too."""
    async with make_sink(omnigent) as sink:
        task = asyncio.ensure_future(sink.ask(QUESTION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await omnigent.wait_for(lambda: any(h.outcome == "disconnected" for h in omnigent.hits))
        assert len(sink._asks) == 0


async def test_delivering_gate_withdrawn_cancels_the_ask(omnigent: OmnigentApp) -> None:
    async with make_sink(omnigent) as sink:
        task = asyncio.ensure_future(sink.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        withdrawn = GateWithdrawn(id="t1/9/gate/withdrawn", cascade_id="c", gate_id="gate-t1-9")
        assert await sink.deliver([withdrawn]) == 1
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
    assert omnigent.types() == ["external_elicitation_resolved"]


async def test_a_sub_agents_own_stream_is_not_posted_to_the_parent_session() -> None:
    from agy_harness.ports.events import SubagentStarted, UserMessage

    app = OmnigentApp()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:  # type: ignore[arg-type]
        sink = OmnigentSink("http://omnigent", app.session_id, client=client, retry=FAST)
        events = [
            SubagentStarted(
                id="t/5/subagent", cascade_id="parent", child_cascade_id="child", parent_call_id="t/5"
            ),
            UserMessage(id="c/x:1/user", cascade_id="child", text="child turn"),
            UserMessage(id="t/x:2/user", cascade_id="parent", text="parent turn"),
        ]
        assert await sink.deliver(events) == 3
    assert [b["data"].get("content") for b in app.received] == ["parent turn"]
