"""End to end (issue 7, "Done when"): a scripted conversation through the simulator reaches the test
omnigent exactly as the wire format, and a sink outage in the middle of it costs nothing.

The path is the real one: ``open_session`` on the simulator's port (version gate, RPC stream source,
RPC turn sender, RPC interaction delivery) -> :class:`OmnigentSink` -> HTTP -> :class:`OmnigentApp`.

The conversation (five turns):

1. ``session.send`` a plain text turn (model M20: the first model change), streamed reasoning + text;
2. ``session.send("run: git status")``: a permission gate parked on the hook, the test pushes
   "allow" into the test omnigent, agy runs the command (function_call + function_call_output);
3. ``session.send("ask: ...?")``: a question gate, answered with option "2";
4. a turn typed in agy's TUI with another model (M71: the second model change), a long streamed reply;
5. ``session.send`` a plain turn again (on M71, the latest turn's model).

In the outage run the test omnigent answers 503 to everything for a window starting as turn 2 is
sent (events and the gate hook), and drops every connection for a window starting as turn 4's reply
streams. Event ids are deterministic, but text/reasoning deltas are per stream frame (an outage
coalesces frames), so the runs are compared on everything but the deltas, and the deltas of each
run are checked on their own (monotonic index, one final, their text adds up to the message).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.scenarios import GREETING, LONG_TEXT, QUESTION_OPTIONS
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy
from agy_harness.composition.harness import HarnessOptions
from agy_harness.composition.session import open_session

from .omnigent_app import OmnigentApp

PACE = 0.02
FIRST_MODEL = "MODEL_PLACEHOLDER_M20"  # the simulator's default (the recommended model)
TUI_MODEL = "MODEL_PLACEHOLDER_M71"
OUTAGE = 0.4  # seconds of each outage window
WAIT = 10.0  # bound of every wait for the conversation to move on (no timing asserts)

HELLO = "Say hello in one short sentence."
RUN = "run: git status"
ASK = "ask: which part should we work on first?"
LONG = "Write a long story about a lighthouse keeper."
BYE = "Thanks, that is all."
TURNS = [HELLO, RUN, ASK, LONG, BYE]

DELTA_TYPES = frozenset({"external_output_text_delta", "external_output_reasoning_delta"})
DATA_KEYS: dict[str, set[str]] = {
    "external_session_status": {"status"},
    "external_output_text_delta": {"delta", "message_id", "index", "final"},
    "external_output_reasoning_delta": {"delta", "started"},
    "external_session_usage": {
        "cumulative_input_tokens",
        "cumulative_output_tokens",
        "cumulative_cache_read_input_tokens",
        "model",
    },
    "external_model_change": {"model"},
    "external_elicitation_resolved": {"elicitation_id"},
}
ITEM_KEYS: dict[tuple[str, str], set[str]] = {
    ("message", "user"): {"item_type", "role", "content", "item_id"},
    ("message", "assistant"): {"item_type", "role", "content", "item_id", "message_id"},
    ("function_call", ""): {"item_type", "call_id", "name", "arguments", "item_id"},
    ("function_call_output", ""): {"item_type", "call_id", "output", "item_id"},
}
FAST = HarnessOptions(sink_retry=0.05, max_backoff=0.2)


@dataclass
class Recording:
    received: list[dict[str, Any]]
    hook_posts: list[dict[str, Any]]
    hits: list[Any]
    steps: list[dict[str, Any]]
    sink_stats: Any
    failed_in_window: list[int] = field(default_factory=list)  # failed requests per outage window


def _idles(app: OmnigentApp) -> int:
    return sum(b["type"] == "external_session_status" and b["data"]["status"] == "idle" for b in app.received)


def _failed(app: OmnigentApp) -> int:
    return sum(h.outcome == "failed" for h in app.hits)


async def converse(*, outage: bool) -> Recording:
    """Run the five turns (with the two outage windows when ``outage``) and return what arrived."""
    app = OmnigentApp()
    windows: list[int] = []
    # a small per-event deadline: the sink gives up inside a window and the harness re-delivers the
    # unaccepted suffix, so both retry layers are exercised
    retry = RetryPolicy(initial=0.02, max_delay=0.1, deadline=0.15)
    loop = asyncio.get_running_loop()
    async with (
        app.serving(),
        Simulator(profile="1.0.10", gate_timeout=None, pace=PACE) as sim,
        OmnigentSink(app.base_url, app.session_id, retry=retry) as sink,
        open_session(port=sim.port, cascade_id=sim.cascade_id, sink=sink, options=FAST) as session,
    ):

        async def turn_done(n: int) -> None:
            await app.wait_for(lambda: _idles(app) >= n, timeout=WAIT)
            await sim.wait_idle(timeout=WAIT)

        async def gate_answered(n: int, answer: dict[str, Any]) -> None:
            await app.wait_for(lambda: len({p["elicitation_id"] for p in app.hook_posts}) >= n, timeout=WAIT)
            await app.push_answer(answer, app.hook_posts[-1]["elicitation_id"])

        async with asyncio.timeout(4 * WAIT):
            assert await session.send(HELLO) == "rpc"
            await turn_done(1)

            before = _failed(app)
            assert await session.send(RUN) == "rpc"
            if outage:  # 503 for everything (events, the hook) while the turn streams
                app.fail_mode = "503"
                app.outage_until = loop.time() + OUTAGE
            await gate_answered(1, {"action": "accept", "content": {"allow": True}})
            await turn_done(2)
            windows.append(_failed(app) - before)

            assert await session.send(ASK) == "rpc"
            await gate_answered(2, {"action": "accept", "content": {"answers": [["2"]]}})
            await turn_done(3)

            before = _failed(app)
            if outage:  # dropped connections from the first streamed chunk of the long reply
                trajectory_steps = len(sim.steps())

                def on_step(_cascade: str, step: dict[str, Any]) -> None:
                    info = step.get("metadata", {}).get("sourceTrajectoryStepInfo", {})
                    text = step.get("plannerResponse", {}).get("modifiedResponse", "")
                    if info.get("stepIndex", -1) >= trajectory_steps and text and not app.outage_until:
                        app.fail_mode = "drop"
                        app.outage_until = loop.time() + OUTAGE

                app.outage_until = 0.0
                unsubscribe: Callable[[], None] = sim.subscribe(on_step)
            await sim.submit_user_turn(LONG, model=TUI_MODEL)  # the user picked another model in the TUI
            await turn_done(4)
            if outage:
                unsubscribe()
                assert app.outage_until, "the drop window never started"
            windows.append(_failed(app) - before)

            assert await session.send(BYE) == "rpc"
            await turn_done(5)
            steps = sim.steps()
    await _nothing_left_running()
    return Recording(app.received, app.hook_posts, app.hits, steps, sink.stats, windows)


async def _nothing_left_running() -> None:
    me = asyncio.current_task()
    async with asyncio.timeout(5):  # the session, the sink, the simulator and the omnigent are all gone
        while [t for t in asyncio.all_tasks() if t is not me and not t.done()]:
            await asyncio.sleep(0.01)


# -- checks ---------------------------------------------------------------------------------------

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalized(values: list[Any]) -> list[Any]:
    """``values`` with every uuid (cascade, trajectory, execution, message ids) replaced by its order of
    first appearance: two simulator runs mint different uuids for the same conversation."""
    names: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"<uuid{len(names)}>")

    return [json.loads(UUID.sub(name, json.dumps(v, sort_keys=True))) for v in values]


def committed(rec: Recording) -> list[dict[str, Any]]:
    return [b for b in rec.received if b["type"] not in DELTA_TYPES]


def items(rec: Recording, item_type: str, role: str | None = None) -> list[dict[str, Any]]:
    return [
        b["data"]
        for b in rec.received
        if b["type"] == "external_conversation_item"
        and b["data"]["item_type"] == item_type
        and (role is None or b["data"].get("role") == role)
    ]


USAGE_FIELDS = ("cumulative_input_tokens", "cumulative_output_tokens", "cumulative_cache_read_input_tokens")


def simulated_usage(steps: list[dict[str, Any]]) -> list[list[int]]:
    """The running totals of the simulator's own per-call ``modelUsage`` (one per planner call)."""
    totals, out = [0, 0, 0], []
    for step in steps:
        if step["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE":
            usage = step["metadata"]["modelUsage"]
            for i, key in enumerate(("inputTokens", "outputTokens", "cacheReadTokens")):
                totals[i] += int(usage.get(key, 0))
            out.append(list(totals))
    return out


def without_token_counts(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The simulator's token counts depend on the length of its steps' text (uuids, timestamps), which
    can differ by one between two simulator runs; each run is checked against its own simulator."""
    return [
        {**b, "data": {k: v for k, v in b["data"].items() if k not in USAGE_FIELDS}}
        if b["type"] == "external_session_usage"
        else b
        for b in bodies
    ]


def check_wire_format(rec: Recording) -> None:
    """Everything omnigent got is a well-formed body, exactly once, in the conversation's order."""
    ids = [b["data"]["event_id"] for b in rec.received]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    for body in rec.received:
        assert set(body) == {"type", "data"}
        data = body["data"]
        assert isinstance(data["event_id"], str) and data["event_id"]
        if body["type"] == "external_conversation_item":
            key = (data["item_type"], data.get("role", ""))
            assert key in ITEM_KEYS, body
            assert set(data) == ITEM_KEYS[key] | {"event_id"}, body
            assert data["item_id"] == data["event_id"]
        else:
            assert body["type"] in DATA_KEYS, body
            assert set(data) == DATA_KEYS[body["type"]] | {"event_id"}, body

    # session status: one running -> idle edge per turn, and each turn opens with its user message
    statuses = [b["data"]["status"] for b in rec.received if b["type"] == "external_session_status"]
    assert statuses == ["running", "idle"] * len(TURNS)
    turns: list[list[dict[str, Any]]] = []
    for body in rec.received:
        if body["type"] == "external_session_status" and body["data"]["status"] == "running":
            turns.append([])
        assert turns, f"{body['type']} before the first running status"
        turns[-1].append(body)
    assert len(turns) == len(TURNS)
    for text, bodies in zip(TURNS, turns, strict=True):
        kinds = [b["type"] for b in bodies]
        first_item = kinds.index("external_conversation_item")
        assert set(kinds[1:first_item]) <= {"external_model_change"}, kinds
        assert bodies[first_item]["data"] == {**bodies[first_item]["data"], "role": "user", "content": text}
        assert [b["data"].get("role") for b in bodies if b["data"].get("item_type") == "message"] == [
            "user",
            "assistant",
        ]
        assert bodies[-1]["type"] == "external_session_status" and bodies[-1]["data"]["status"] == "idle"

    # the model: M20 from the first turn, M71 from the TUI turn on; usage names it, totals only grow
    changes = [b for b in rec.received if b["type"] == "external_model_change"]
    assert [c["data"]["model"] for c in changes] == [FIRST_MODEL, TUI_MODEL]
    assert changes[0] in turns[0] and changes[1] in turns[3]
    usage = [b["data"] for b in rec.received if b["type"] == "external_session_usage"]
    assert len(usage) == 7  # one per planner call: 5 replies + 2 tool-calling calls
    for field_name in USAGE_FIELDS:
        values = [u[field_name] for u in usage]
        assert all(isinstance(v, int) and v >= 0 for v in values), values
        assert values == sorted(values), (field_name, values)
    assert usage[0]["cumulative_input_tokens"] > 0 and usage[-1]["cumulative_output_tokens"] > 0
    assert [[u[k] for k in USAGE_FIELDS] for u in usage] == simulated_usage(rec.steps)
    assert usage[-1]["cumulative_input_tokens"] > usage[0]["cumulative_input_tokens"]
    per_turn = [[b["data"]["model"] for b in t if b["type"] == "external_session_usage"] for t in turns]
    assert per_turn == [[FIRST_MODEL], [FIRST_MODEL] * 2, [FIRST_MODEL] * 2, [TUI_MODEL], [TUI_MODEL]]

    # assistant replies: the scripted texts, each after its deltas (index 0.., one final, adding up)
    assistant = items(rec, "message", "assistant")
    texts = [a["content"] for a in assistant]
    assert texts[0] == GREETING and texts[3] == LONG_TEXT and "Thanks, that is all." in texts[4]
    assert texts[1].startswith("`git status` ran (exit code 0): On branch main")
    assert texts[2] == f"You chose: {QUESTION_OPTIONS[1]}."
    assert len({a["message_id"] for a in assistant}) == len(assistant)
    position = {id(b): i for i, b in enumerate(rec.received)}
    committed_at = {
        a["message_id"]: position[id(b)]
        for b in rec.received
        if b["type"] == "external_conversation_item"
        for a in [b["data"]]
        if a.get("role") == "assistant"
    }
    text_deltas: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, body in enumerate(rec.received):
        if body["type"] == "external_output_text_delta":
            text_deltas.setdefault(body["data"]["message_id"], []).append((i, body["data"]))
    assert set(text_deltas) <= set(committed_at), "a delta for a message that was never committed"
    by_message = {a["message_id"]: a["content"] for a in assistant}
    for message_id, deltas in text_deltas.items():
        assert [d["index"] for _, d in deltas] == list(range(len(deltas)))
        assert [d["final"] for _, d in deltas] == [False] * (len(deltas) - 1) + [True]
        assert "".join(d["delta"] for _, d in deltas) == by_message[message_id]
        assert all(i < committed_at[message_id] for i, _ in deltas)
    long_id = assistant[3]["message_id"]
    assert len(text_deltas.get(long_id, [])) > 1, "the long reply was not streamed"
    reasoning: dict[str, list[dict[str, Any]]] = {}
    for body in rec.received:
        if body["type"] == "external_output_reasoning_delta":
            step = body["data"]["event_id"].rsplit("/thinking/", 1)[0]
            reasoning.setdefault(step, []).append(body["data"])
    assert reasoning, "no reasoning was streamed"
    for deltas in reasoning.values():
        spans = [tuple(map(int, d["event_id"].rsplit("/", 1)[1].split("-"))) for d in deltas]  # text offsets
        assert [s for s, _ in spans] == [0] + [e for _, e in spans[:-1]]
        assert [e - s for s, e in spans] == [len(d["delta"]) for d in deltas]
        assert [d["started"] for d in deltas] == [True] + [False] * (len(deltas) - 1)
        assert all(d["delta"] for d in deltas)

    # tools: each function_call directly followed by its output (same call_id)
    pairs = [
        (a["data"], b["data"])
        for a, b in zip(rec.received, rec.received[1:], strict=False)
        if a["data"].get("item_type") == "function_call"
    ]
    assert len(pairs) == len(items(rec, "function_call")) == len(items(rec, "function_call_output")) == 2
    for call, output in pairs:
        assert output["item_type"] == "function_call_output" and output["call_id"] == call["call_id"]
    (run_call, run_out), (ask_call, ask_out) = pairs
    assert (
        run_call["name"] == "run_command" and json.loads(run_call["arguments"])["CommandLine"] == "git status"
    )
    assert run_out["output"].startswith("On branch main")
    assert ask_call["name"] == "ask_question"
    asked = json.loads(ask_call["arguments"])["questions"][0]
    assert asked["question"] == "Which part should we work on first?"
    assert QUESTION_OPTIONS[1] in ask_out["output"]

    # gates: each parked on the hook once per id, answered, delivered to agy, then resolved
    gate_ids = list(dict.fromkeys(p["elicitation_id"] for p in rec.hook_posts))
    assert len(gate_ids) == 2
    first = {p["elicitation_id"]: p["params"] for p in reversed(rec.hook_posts)}
    permission, question = first[gate_ids[0]], first[gate_ids[1]]
    assert permission["kind"] == "permission" and permission["permission"]["command_line"] == "git status"
    assert question["kind"] == "question"
    assert [o["text"] for o in question["questions"][0]["options"]] == QUESTION_OPTIONS
    resolved = [
        b["data"]["elicitation_id"] for b in rec.received if b["type"] == "external_elicitation_resolved"
    ]
    assert resolved == gate_ids
    hook_path = [h for h in rec.hits if h.path.endswith("/hooks/antigravity-elicitation-request")]
    assert [h.outcome for h in hook_path if h.outcome != "failed"] == ["answered", "answered"]
    for gate_id in gate_ids:
        answered = next(
            i
            for i, h in enumerate(rec.hits)
            if h.outcome == "answered" and h.body["elicitation_id"] == gate_id
        )
        resolved_at = next(
            i
            for i, h in enumerate(rec.hits)
            if h.outcome == "accepted"
            and h.body["type"] == "external_elicitation_resolved"
            and h.body["data"]["elicitation_id"] == gate_id
        )
        assert answered < resolved_at
    run_step = next(s for s in rec.steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND")
    ask_step = next(s for s in rec.steps if s["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION")
    assert run_step["status"] == ask_step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert run_step["completedInteractions"][-1]["response"]["permission"] == {"allow": True}
    assert ask_step["askQuestion"]["questions"][0]["selectedOptionIds"] == ["2"]


# -- the tests ------------------------------------------------------------------------------------


async def test_a_scripted_conversation_arrives_as_the_wire_format() -> None:
    clean = await converse(outage=False)
    check_wire_format(clean)
    assert not any(h.outcome == "failed" for h in clean.hits)
    assert clean.sink_stats.retries == clean.sink_stats.gave_up == clean.sink_stats.dropped == 0


async def test_a_sink_outage_in_the_middle_costs_nothing() -> None:
    clean = await converse(outage=False)
    broken = await converse(outage=True)

    # the outages happened: requests failed in both windows, the sink retried and gave up, the
    # harness re-delivered what was not accepted; nothing was skipped or held
    assert all(n > 0 for n in broken.failed_in_window), broken.failed_in_window
    stats = broken.sink_stats
    assert stats.retries > 0 and stats.gave_up > 0
    assert stats.dropped == stats.held == 0 and stats.duplicates == 0

    check_wire_format(broken)
    # the same committed bodies, exactly, in the same order (ids, content, gates, usage but its token
    # counts, which check_wire_format compared with each run's own simulator) ...
    assert normalized(without_token_counts(committed(broken))) == normalized(
        without_token_counts(committed(clean))
    )
    # ... so the same multiset and order of event ids (deltas are per stream frame: checked per run)
    clean_ids = normalized([b["data"]["event_id"] for b in committed(clean)])
    broken_ids = normalized([b["data"]["event_id"] for b in committed(broken)])
    assert broken_ids == clean_ids and Counter(broken_ids) == Counter(clean_ids)
    assert normalized(items(broken, "message", "assistant")) == normalized(
        items(clean, "message", "assistant")
    )
