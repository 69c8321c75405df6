"""The omnigent sink against the REAL omnigent 0.19.1 server, through the simulator.

One ten-turn conversation (``open_session`` on the simulator -> OmnigentSink -> omnigent server), every
gate answered through the web UI's resolve route with the web form's content shapes:

1. a text turn; 2. a command allowed (the card's Approve: accept, no content); 3. a command denied
(Reject: decline); 4. a single-choice question (``{"0": "<label>"}``); 5. a multi-select question
(``{"0": ["<label>", "<label>"]}``); 6. a question answered with free text (the write-in); 7. a
command whose hook returns an empty 200 first (resolved elsewhere while parked), answered after the
sink asks again; 8. a TUI turn on another model (a long streamed reply); 9. a sub-agent; 10. a last
text turn. Then: omnigent's items are exactly the harness's committed items (n of n, in order), a
full re-delivery adds no row, usage totals and model display names match, the sub-agent's items are
in its child session, and a new web subscriber gets no stale preview.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
import pytest_asyncio

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import QUESTION_OPTIONS
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy, elicitation_id
from agy_harness.composition.root.session import open_session
from agy_harness.ports.events import AssistantMessage, Event, SubagentStarted, TextDelta, Usage
from tests.real_omnigent import create_session

from .helpers import FAST, ITEM_EVENT_TYPES, Omnigent, Tee, stored_item_id

PACE = 0.02
pytestmark = pytest.mark.asyncio(loop_scope="module")
WAIT = 30.0
TUI_MODEL = "MODEL_PLACEHOLDER_M71"


@dataclasses.dataclass
class Run:
    session_id: str
    events: list[Event]
    steps: list[dict[str, Any]]
    child_steps: dict[str, list[dict[str, Any]]]
    catalog: dict[str, str]
    sink: OmnigentSink
    empty_answers: int
    statuses_to_the_web: list[str]


def _idles(tee: Tee) -> int:
    return sum(
        e.type == "status" and e.status == "idle" and e.cascade_id == tee.accepted[0].cascade_id
        for e in tee.accepted
    )


async def _converse(omni: Omnigent) -> Run:
    sid = await asyncio.to_thread(create_session, omni.base_url)
    answered: list[str] = []
    async with (
        Simulator(profile="1.0.10", gate_timeout=None, pace=PACE) as sim,
        OmnigentSink(omni.base_url, sid, retry=RetryPolicy(initial=0.02, max_delay=0.2)) as sink,
    ):
        tee = Tee(sink)
        async with open_session(port=sim.port, cascade_id=sim.cascade_id, sink=tee, options=FAST) as session:

            async def turn(n: int) -> None:
                async with asyncio.timeout(WAIT):
                    while _idles(tee) < n:
                        await asyncio.sleep(0.02)
                await sim.wait_idle(timeout=WAIT)

            async def answer(body: dict[str, Any]) -> dict[str, Any]:
                card = await omni.wait_pending(sid, not_in=answered, timeout=WAIT)
                answered.append(card["elicitation_id"])
                r = await omni.resolve(sid, card["elicitation_id"], body)
                assert r.status_code == 202, r.text
                return card

            await session.send("Say hello in one short sentence.")
            await turn(1)
            await session.send("run: git status")
            await answer({"action": "accept"})
            await turn(2)
            await session.send("run: rm -rf build")
            await answer({"action": "decline"})
            await turn(3)
            await session.send("ask: which part should we work on first?")
            await answer({"action": "accept", "content": {"0": QUESTION_OPTIONS[1]}})
            await turn(4)
            await session.send("ask multiple: which parts should we test?")
            card = await omni.wait_pending(sid, not_in=answered, timeout=WAIT)
            labels = [o["label"] for o in card["params"]["ask_user_question"]["questions"][0]["options"]]
            answered.append(card["elicitation_id"])
            r = await omni.resolve(
                sid, card["elicitation_id"], {"action": "accept", "content": {"0": [labels[0], labels[2]]}}
            )
            assert r.status_code == 202, r.text
            await turn(5)
            await session.send("ask: which database should we use?")
            await answer({"action": "accept", "content": {"0": "PostgreSQL 16, please"}})
            await turn(6)
            # 7: while the hook is parked, omnigent is told the elicitation was resolved elsewhere: the
            # hook answers an empty 200; the sink asks again and the web answer still reaches agy
            watcher = asyncio.create_task(omni.watch(sid, "session.status"))
            async with asyncio.timeout(WAIT):
                await omni.watching.wait()
            await session.send("run: git log -n 1")
            card = await omni.wait_pending(sid, not_in=answered, timeout=WAIT)
            watcher.cancel()
            await watcher_events(watcher)
            waiting = [str(e.get("status")) for e in omni.watched]
            before = sink.stats.empty_answers
            r = await omni.post_event(
                sid,
                {"type": "external_elicitation_resolved", "data": {"elicitation_id": card["elicitation_id"]}},
            )
            assert r.status_code == 202, r.text
            async with asyncio.timeout(WAIT):
                while sink.stats.empty_answers == before:
                    await asyncio.sleep(0.02)
            again = await omni.wait_pending(sid, timeout=WAIT)  # the same card, parked again
            assert again["elicitation_id"] == card["elicitation_id"]
            answered.append(again["elicitation_id"])
            r = await omni.resolve(sid, again["elicitation_id"], {"action": "accept"})
            assert r.status_code == 202, r.text
            await turn(7)
            await sim.submit_user_turn("Write a long story about a lighthouse keeper.", model=TUI_MODEL)
            await turn(8)
            await session.send("start a subagent to review the code")
            await turn(9)
            await session.send("Thanks, that is all.")
            await turn(10)
            children = [c for c in sim.cascade_ids() if c != sim.cascade_id]
            async with asyncio.timeout(WAIT):  # the child's own turn is mirrored to its end
                while not any(
                    e.type == "status" and e.status == "idle" and e.cascade_id in children
                    for e in tee.accepted
                ):
                    await asyncio.sleep(0.02)
            steps = sim.steps()
            child_steps = {c: sim.steps(c) for c in children}
            catalog = {m.model: m.label for m in await _catalog(session)}
    return Run(sid, tee.accepted, steps, child_steps, catalog, sink, sink.stats.empty_answers, waiting)


async def watcher_events(task: asyncio.Task[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    try:
        return await task
    except asyncio.CancelledError:
        return []


async def _catalog(session: Any) -> list[Any]:
    from agy_harness.adapters.rpc.actions import RpcModelCatalog
    from agy_harness.adapters.rpc.client import RpcClient

    async with RpcClient(session.base_url) as client:  # the test's own reader of agy's catalog
        return await RpcModelCatalog(client).models()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(omni: Omnigent) -> Run:
    return await _converse(omni)


def _items_of(run: Run, cascade_id: str) -> list[Event]:
    return [e for e in run.events if e.type in ITEM_EVENT_TYPES and e.cascade_id == cascade_id]


async def test_every_committed_event_is_stored_once_in_order(run: Run, omni: Omnigent) -> None:
    main = run.events[0].cascade_id
    expected = _items_of(run, main)
    stored = [i for i in await omni.items(run.session_id) if i["type"] != "resource_event"]
    assert len(expected) >= 30
    assert [i["id"] for i in stored] == [stored_item_id(run.session_id, e.id) for e in expected]
    stats = run.sink.stats
    print(
        f"items stored: {len(stored)} of {len(expected)}; {stats.posted} events in {stats.requests} requests"
    )
    user = [i["content"][0]["text"] for i in stored if i["type"] == "message" and i["role"] == "user"]
    assert user[0] == "Say hello in one short sentence." and len(user) == 10  # the sub-agent's is its own
    assert run.sink.stats.dropped == run.sink.stats.held == 0
    assert run.sink.stats.requests < run.sink.stats.posted  # items went out batched


async def test_a_full_redelivery_adds_no_row(run: Run, omni: Omnigent) -> None:
    before = await omni.items(run.session_id)
    async with OmnigentSink(omni.base_url, run.session_id, cascade_id=run.events[0].cascade_id) as again:
        assert await again.deliver(run.events) == len(run.events)
        print(f"re-delivery: {len(run.events)} events in {again.stats.requests} requests")
    after = await omni.items(run.session_id)
    assert [i["id"] for i in after] == [i["id"] for i in before]


def _step(run: Run, kind: str, n: int = 0) -> dict[str, Any]:
    return [s for s in run.steps if s["type"] == f"CORTEX_STEP_TYPE_{kind}"][n]


async def test_gates_answered_on_the_web_reach_agy_as_intended(run: Run) -> None:
    allowed, denied, late = (
        _step(run, "RUN_COMMAND", 0),
        _step(run, "RUN_COMMAND", 1),
        _step(run, "RUN_COMMAND", 2),
    )
    assert allowed["status"] == "CORTEX_STEP_STATUS_DONE"
    assert allowed["completedInteractions"][-1]["response"]["permission"] == {"allow": True}
    assert denied["status"] == "CORTEX_STEP_STATUS_ERROR"
    assert denied["completedInteractions"][-1]["response"]["permission"].get("allow", False) is False
    assert late["status"] == "CORTEX_STEP_STATUS_DONE" and run.empty_answers >= 1
    assert run.statuses_to_the_web[-1:] == ["waiting"]  # what a web subscriber saw while it was parked
    single, multi, write_in = (_step(run, "ASK_QUESTION", i)["askQuestion"]["questions"][0] for i in range(3))
    assert single["selectedOptionIds"] == ["2"]
    assert multi["selectedOptionIds"] == ["1", "3"]
    assert (
        write_in.get("selectedOptionIds", []) == [] and write_in["writeInResponse"] == "PostgreSQL 16, please"
    )


async def test_usage_totals_and_model_names(run: Run, omni: Omnigent) -> None:
    """omnigent's session usage (its view: the session and its sub-agents) equals the harness's totals."""
    last: dict[str, Usage] = {}
    for e in run.events:
        if isinstance(e, Usage):
            last[e.cascade_id] = e
    assert len(last) == 2  # the conversation and its sub-agent
    by_model = (await omni.session(run.session_id))["usage_by_model"]

    def total(key: str) -> int:
        return sum(int(m.get(key) or 0) for m in by_model.values())

    assert total("input_tokens") == sum(u.cumulative_input_tokens for u in last.values())
    assert total("cache_read_input_tokens") == sum(
        u.cumulative_cache_read_input_tokens for u in last.values()
    )
    assert total("output_tokens") == sum(u.cumulative_output_tokens for u in last.values())
    models = {e.model for e in run.events if isinstance(e, Usage)}
    assert set(by_model) == {run.catalog[m] for m in models}
    assert not any(name.startswith("MODEL_") for name in by_model)
    print(
        f"usage: omnigent {total('input_tokens')}/{total('cache_read_input_tokens')}/{total('output_tokens')}"
    )


async def test_a_sub_agents_items_are_in_its_child_session(run: Run, omni: Omnigent) -> None:
    (started,) = [e for e in run.events if isinstance(e, SubagentStarted)]
    (child,) = await omni.children(run.session_id)
    assert child["labels"]["omnigent.antigravity_native.subagent_cascade_id"] == started.child_cascade_id
    # the role and type agy's step gives it, as omnigent shows the child (its title and labels)
    assert (started.role, started.agent_type) == ("Code Reviewer", "research")
    assert child["title"] == f"Code Reviewer:{started.child_cascade_id}"
    assert child["labels"]["omnigent.antigravity_native.agent_role"] == "Code Reviewer"
    assert child["labels"]["omnigent.antigravity_native.agent_type"] == "research"
    expected = _items_of(run, started.child_cascade_id)
    stored = [i for i in await omni.items(child["id"]) if i["type"] != "resource_event"]
    assert expected and [i["id"] for i in stored] == [stored_item_id(child["id"], e.id) for e in expected]
    assert any(i["type"] == "message" and i["role"] == "assistant" for i in stored)


async def test_a_new_web_subscriber_sees_no_stale_preview(run: Run, omni: Omnigent) -> None:
    streamed = {e.message_id for e in run.events if isinstance(e, TextDelta)}
    committed = {e.message_id for e in run.events if isinstance(e, AssistantMessage)}
    assert streamed and streamed <= committed
    snapshot = await omni.snapshot_events(run.session_id)
    assert [e for e in snapshot if e.get("type") == "response.output_text.delta"] == []


async def test_the_stale_preview_check_can_fail(omni: Omnigent) -> None:
    """Control: deltas re-sent for a message omnigent stored a few messages ago (what a re-delivery
    would post if the sink re-sent them) leave a preview the deduplicated item never retires."""
    sid = await asyncio.to_thread(create_session, omni.base_url)

    def message(n: int) -> list[dict[str, Any]]:
        text = f"Reply number {n}."
        item = {
            "item_type": "message",
            "item_data": {
                "role": "assistant",
                "agent": "a",
                "content": [{"type": "output_text", "text": text}],
            },
            "source_id": f"control/{n}",
            "message_id": f"m-{n}",
        }
        delta = {"delta": text, "message_id": f"m-{n}", "index": 0, "final": True}
        return [
            {"type": "external_output_text_delta", "data": delta},
            {"type": "external_conversation_item", "data": item},
        ]

    for n in range(5):
        for body in message(n):
            assert (await omni.post_event(sid, body)).status_code == 202
    assert [e for e in await omni.snapshot_events(sid) if e.get("type") == "response.output_text.delta"] == []
    for body in message(0):  # message 0 again: its item is deduplicated, its preview stays
        assert (await omni.post_event(sid, body)).status_code == 202
    stale = [
        e["delta"] for e in await omni.snapshot_events(sid) if e.get("type") == "response.output_text.delta"
    ]
    assert stale == ["Reply number 0."]


async def test_elicitation_ids_are_url_safe() -> None:
    eid = elicitation_id("a1b2c3d4-0000-4000-8000-000000000000/12")
    assert "/" not in eid and eid.startswith("elicit_agy_") and len(eid) == len("elicit_agy_") + 32


async def test_clear_continues_in_the_same_session_after_a_visible_boundary(omni: Omnigent) -> None:
    """agy's /clear: the new conversation's items follow a boundary item in the same omnigent session."""
    sid = await asyncio.to_thread(create_session, omni.base_url)
    async with (
        Simulator(profile="1.0.10", gate_timeout=None, pace=PACE) as sim,
        OmnigentSink(omni.base_url, sid, retry=RetryPolicy(initial=0.02, max_delay=0.2)) as sink,
    ):
        tee = Tee(sink)
        async with open_session(port=sim.port, cascade_id=sim.cascade_id, sink=tee, options=FAST) as session:

            async def idle_in(cascade: str) -> None:
                async with asyncio.timeout(WAIT):
                    while not any(
                        e.type == "status" and e.status == "idle" and e.cascade_id == cascade
                        for e in tee.accepted
                    ):
                        await asyncio.sleep(0.02)

            first = sim.cascade_id
            await session.send("Say hello in one short sentence.")
            await idle_in(first)
            new = await sim.submit_user_turn("/clear")
            await sim.submit_user_turn("Say hello again.")  # typed in agy's TUI after /clear
            await idle_in(new)
    stored = [i for i in await omni.items(sid) if i["type"] != "resource_event"]
    kinds = [(i["type"], i.get("role") or i.get("code")) for i in stored]
    assert kinds == [
        ("message", "user"),
        ("message", "assistant"),
        ("error", "agy_conversation_cleared"),
        ("message", "user"),
        ("message", "assistant"),
    ], kinds
    boundary = stored[2]
    assert boundary["level"] == "info" and new in boundary["message"]
    assert [i["id"] for i in stored] == [
        stored_item_id(sid, e.id) for e in tee.accepted if e.type in ITEM_EVENT_TYPES
    ]
