"""The omnigent sink: its mapping (pure), reading the web UI's answers fail-closed, and its behaviour
under faults (the FAKE omnigent of omnigent_app.py: 503s, dropped connections, refusals, empty 200s).
What the real omnigent 0.19.1 stores and renders is tested in tests/omnigent_real/."""

from __future__ import annotations

import asyncio
import json
import typing
from collections.abc import Sequence
from typing import Any

import pytest

from agy_harness.adapters.sinks.omnigent import (
    OmnigentProtocolError,
    OmnigentRejected,
    OmnigentSink,
    RetryPolicy,
    answer_from_result,
    elicitation_id,
    gate_params,
    source_id,
    to_wire,
)
from agy_harness.core.answers import AnswerError
from agy_harness.ports.events import (
    AssistantMessage,
    Event,
    GateOpened,
    GateWithdrawn,
    QuestionOption,
    StatusChanged,
    SubagentStarted,
    TextDelta,
    Usage,
    UserMessage,
)
from agy_harness.ports.protocols import EventSink, GateAnswer
from tests.fakes import FakeClock

from .omnigent_app import OmnigentApp, real_rules
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


# -- the mapping (pure) ------------------------------------------------------------------------------


def test_samples_cover_every_event_type() -> None:
    union = typing.get_args(typing.get_args(Event)[0])
    assert {e.type for e in SAMPLES} == {t.model_fields["type"].default for t in union}


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_every_body_is_one_omnigent_accepts(event: Event) -> None:
    body = to_wire(event)
    if event.type == "gate_opened":
        assert body is None
        return
    assert body is not None and real_rules(body) is None, body
    if body["type"] == "external_conversation_item":
        assert body["data"]["source_id"] == event.id  # omnigent dedups a re-delivery on it


def test_items_carry_omnigent_item_data() -> None:
    by_type = {e.type: to_wire(e) for e in SAMPLES}
    assert by_type["user_message"]["data"]["item_data"] == {  # type: ignore[index]
        "role": "user",
        "content": [{"type": "input_text", "text": "hello there"}],
    }
    assistant = by_type["assistant_message"]["data"]  # type: ignore[index]
    assert assistant["item_data"]["content"] == [{"type": "output_text", "text": "Hello!"}]
    assert assistant["message_id"] == "t1/2"  # retires the live preview its deltas built
    call = by_type["tool_call"]["data"]["item_data"]  # type: ignore[index]
    assert json.loads(call["arguments"]) == {"CommandLine": "ls -la", "Cwd": "/tmp/é"}
    assert by_type["rotation"]["data"]["item_data"]["code"] == "agy_conversation_cleared"  # type: ignore[index]


def test_usage_has_omnigents_semantics_and_display_names() -> None:
    usage = next(e for e in SAMPLES if isinstance(e, Usage))
    body = to_wire(usage, model_names={"MODEL_X": "Gemini X"}.get)
    assert body is not None
    assert body["data"] == {
        "cumulative_input_tokens": 127,  # agy's 120 + 7 cache reads: omnigent's input includes them
        "cumulative_output_tokens": 30,
        "cumulative_cache_read_input_tokens": 7,
        "model": "Gemini X",
    }


def test_a_failure_carries_its_text_and_long_ids_are_hashed() -> None:
    failed = to_wire(
        StatusChanged(id="t/9/status/failed", cascade_id=C, status="failed", reason="quota exceeded")
    )
    assert failed == {
        "type": "external_session_status",
        "data": {"status": "failed", "output": "quota exceeded"},
    }
    bare = to_wire(StatusChanged(id="t/9/status/failed", cascade_id=C, status="failed"))
    assert bare is not None and bare["data"]["output"]
    long_id = "t/" + "x" * 400
    assert len(source_id(long_id)) <= 256 and source_id(long_id) == source_id(long_id) != source_id(
        long_id + "y"
    )


def test_elicitation_ids_are_deterministic_and_url_safe() -> None:
    eid = elicitation_id("9d3f/12")
    assert eid == elicitation_id("9d3f/12") != elicitation_id("9d3f/13")
    assert "/" not in eid and eid.startswith("elicit_agy_")


def test_gate_params_render_the_web_uis_cards() -> None:
    q = gate_params(QUESTION_GATE)
    assert q["ask_user_question"] == {
        "questions": [
            {
                "id": "0",
                "question": "Which part first?",
                "options": [{"label": "Backend"}, {"label": "Frontend"}],
                "multiSelect": False,
            },
            {
                "id": "1",
                "question": "Which tests?",
                "options": [{"label": "Unit"}, {"label": "Integration"}],
                "multiSelect": True,
            },
        ]
    }
    p = gate_params(PERMISSION_GATE)
    assert (p["phase"], p["command"], p["cwd"]) == ("agy_permission", "git status", "/repo")
    assert p["message"] == "Antigravity wants to run: git status (in /repo)"
    assert gate_params(PERMISSION_GATE) == p  # deterministic: omnigent matches re-POSTs by them


def test_each_request_goes_out_under_its_own_policy_name() -> None:
    """omnigent's chat remembers "approve always" per (policy_name, phase): one name per request."""
    first = PERMISSION_GATE.model_copy(update={"digest": "a" * 32})
    other = PERMISSION_GATE.model_copy(update={"gate_id": "c/t1/11/x", "digest": "f" * 32})
    names = {gate_params(g)["policy_name"] for g in (first, other, QUESTION_GATE)}
    assert len(names) == 3
    assert gate_params(first)["policy_name"] == "agy_native_permission." + "a" * 16
    re_ask = first.model_copy(update={"gate_id": "c/t1/12/y", "step_index": 12})  # the same request
    assert gate_params(re_ask)["policy_name"] == gate_params(first)["policy_name"]


def test_the_card_shows_every_character_and_the_whole_command() -> None:
    hidden = PERMISSION_GATE.permission.model_copy(  # type: ignore[union-attr]
        update={"command_line": "rm -rf ~/work\u200d #" + "\n" * 30 + "ls [red]x[/red]\U000e0041"}
    )
    p = gate_params(PERMISSION_GATE.model_copy(update={"permission": hidden}))
    assert p["command"] == "rm -rf ~/work\\u200d #\n⋯ 29 blank lines ⋯\nls [red]x[/red]\\U000e0041"
    assert "rm -rf ~/work" in p["message"] and "29 blank lines" in p["message"]
    assert "\\[red]" in p["message"]  # omnigent's chat prints the message as rich markup


def test_agys_own_allow_always_is_offered_for_its_pattern_only() -> None:
    offered = PERMISSION_GATE.permission.model_copy(  # type: ignore[union-attr]
        update={
            "persist_suggestion_type": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
            "suggested_persist_pattern": "git",
        }
    )
    gate = PERMISSION_GATE.model_copy(update={"permission": offered})
    assert gate_params(gate)["always_allow_pattern"] == "git"
    assert "always_allow_pattern" not in gate_params(PERMISSION_GATE)
    assert (
        answer_from_result(gate, {"action": "accept", "_meta": {"persist": "session"}}).persist == "session"
    )
    assert answer_from_result(gate, {"action": "accept", "_meta": {"persist": "always"}}).persist == "always"
    assert answer_from_result(gate, {"action": "accept", "_meta": {"persist": "forever"}}).persist is None
    assert answer_from_result(gate, {"action": "decline", "_meta": {"persist": "always"}}).persist is None
    denied = answer_from_result(gate, {"action": "accept", "content": {"answer": "no: use git stash"}})
    assert (denied.allow, denied.deny_reason) == (False, "use git stash")


def test_the_terminal_form_shows_agys_text_by_the_rendering_rule() -> None:
    """omnigent's chat prints the preview as rich markup and the form's fields as plain text: agy's
    question and options can neither style the screen nor hide characters, and the typed answer,
    keyed by the field the chat showed, reaches the question it names."""
    hostile = QUESTION_GATE.questions[0].model_copy(
        update={
            "question": "Delete [bold red]prod[/]?\u202e",
            "options": (
                QuestionOption(id="1", text="yes [link=x]\x1b[2J"),
                QuestionOption(id="2", text="no"),
            ),
        }
    )
    gate = QUESTION_GATE.model_copy(update={"questions": (hostile, QUESTION_GATE.questions[1])})
    params = gate_params(gate)
    preview = params["content_preview"]
    assert "\\[bold red]" in preview and "\\[link=x]" in preview  # escaped for rich markup
    assert "\\u202e" in preview and "\\x1b" in preview and "\x1b" not in preview
    fields = params["requestedSchema"]["properties"]
    key = "Delete [bold red]prod[/]?\\u202e"
    assert list(fields) == [key, "Which tests?"]
    assert fields[key]["description"].startswith("Options: 1 = yes [link=x]\\x1b[2J; 2 = no")
    typed = {"action": "accept", "content": {key: "2", "Which tests?": "1, 2"}}
    assert answer_from_result(gate, typed) == GateAnswer(selections=(("2",), ("1", "2")))


def test_a_key_that_could_name_two_questions_is_refused() -> None:
    twins = tuple(
        QUESTION_GATE.questions[0].model_copy(update={"question": text}) for text in ("a\u200d", "a\\u200d")
    )
    gate = QUESTION_GATE.model_copy(update={"questions": twins})
    keys = list(gate_params(gate)["requestedSchema"]["properties"])
    assert keys == ["a\\u200d", "a\\\\u200d"]  # what the chat shows, each its own
    with pytest.raises(AnswerError, match="several questions"):  # one's shown text is the other's raw
        answer_from_result(gate, {"action": "accept", "content": {"a\\u200d": "1", "1": "1"}})


def test_a_card_only_agys_terminal_answers_has_its_own_policy_name() -> None:
    """A chat's "always" on such a card would otherwise approve every later one with no prompt."""
    review = GateOpened(
        id="t1/12/gate",
        cascade_id=C,
        step_key="t1/12",
        gate_id="c/t1/12/d",
        kind="other",
        trajectory_id="t1",
        step_index=12,
        tool_name="write_to_file",
        interaction="fileReview[x]",
        answerable=False,
        digest="b" * 32,
    )
    params = gate_params(review)
    assert params["policy_name"] == "agy_native_terminal_only." + "b" * 16
    assert "fileReview\\[x]" in params["message"]  # printed as markup by the chat


# -- the web UI's answers, fail-closed -------------------------------------------------------------

QUESTION_ANSWERS: list[tuple[dict[str, Any], GateAnswer]] = [
    (
        {"action": "accept", "content": {"0": "Frontend", "1": ["Unit", "Integration"]}},
        GateAnswer(selections=(("Frontend",), ("Unit", "Integration"))),
    ),
    (
        {"action": "accept", "content": {"Which part first?": "2", "which tests?": ["1", "also e2e"]}},
        GateAnswer(selections=(("2",), ("1", "also e2e"))),
    ),
    ({"action": "decline"}, GateAnswer(action="decline")),
    ({"action": "cancel", "content": {"0": "Backend"}}, GateAnswer(action="cancel")),
]


@pytest.mark.parametrize(("result", "answer"), QUESTION_ANSWERS)
def test_question_answers_from_the_web_form(result: dict[str, Any], answer: GateAnswer) -> None:
    assert answer_from_result(QUESTION_GATE, result) == answer


@pytest.mark.parametrize(
    ("result", "allow"),
    [
        ({"action": "accept"}, True),  # the card's Approve
        ({"action": "accept", "content": {}}, True),
        ({"action": "accept", "_meta": {"persist": "session"}}, True),
        ({"action": "accept", "content": {"allow": False}}, False),
        ({"action": "accept", "content": {"0": "deny"}}, False),
        ({"action": "decline"}, False),  # the card's Reject
        ({"action": "cancel"}, False),
    ],
)
def test_permission_answers(result: dict[str, Any], allow: bool) -> None:
    assert answer_from_result(PERMISSION_GATE, result).allow is allow


@pytest.mark.parametrize(
    ("gate", "result"),
    [
        (PERMISSION_GATE, {"action": "accept", "content": {"allow": "maybe"}}),
        (PERMISSION_GATE, {"action": "accept", "content": {"allow": True, "deny": True}}),
        (PERMISSION_GATE, {"action": "accept", "content": {"whatever": "yes"}}),
        (PERMISSION_GATE, {"action": "accept", "content": "yes"}),
        (QUESTION_GATE, {"action": "accept"}),
        (QUESTION_GATE, {"action": "accept", "content": {"0": "Backend"}}),  # question 2 left unanswered
        (
            QUESTION_GATE,
            {"action": "accept", "content": {"0": ["Backend", "Frontend"], "1": "Unit"}},
        ),  # single
        (QUESTION_GATE, {"action": "accept", "content": {"0": "7", "1": "Unit"}}),  # no option 7
        (QUESTION_GATE, {"action": "accept", "content": {"0": "Backend", "1": "Unit", "2": "x"}}),
        (QUESTION_GATE, {"action": "accept", "content": {"0": 2, "1": "Unit"}}),
    ],
)
def test_ambiguous_answers_are_refused(gate: Any, result: dict[str, Any]) -> None:
    with pytest.raises(AnswerError):
        answer_from_result(gate, result)


@pytest.mark.parametrize("result", [None, [], {"content": {}}, {"action": "approve"}])
def test_a_body_that_is_no_verdict_is_a_protocol_error(result: Any) -> None:
    with pytest.raises(OmnigentProtocolError):
        answer_from_result(PERMISSION_GATE, result)


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
        answer = await asyncio.wait_for(ask, 5)
    assert answer.selections == (("Backend",), ("Unit",))
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
        answer = await asyncio.wait_for(ask, 5)
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
        answer = await asyncio.wait_for(ask, 5)
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
            await asyncio.wait_for(sink.ask(PERMISSION_GATE), 5)


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
