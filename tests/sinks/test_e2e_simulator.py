"""Fault injection end to end: a scripted conversation through the simulator reaches the FAKE omnigent
(omnigent_app.py, which accepts what omnigent 0.19.1 accepts) and a sink outage in the middle of it
costs nothing. What the real server stores is tested in tests/omnigent_real/test_conversation.py.

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
from agy_harness.composition.root.session import open_session
from agy_harness.composition.service.harness import HarnessOptions

from .omnigent_app import OmnigentApp
from .omnigent_rules import real_rules

PACE = 0.02
FIRST_MODEL = "MODEL_PLACEHOLDER_M20"  # the simulator's default (the recommended model)
TUI_MODEL = "MODEL_PLACEHOLDER_M71"
FIRST_NAME, TUI_NAME = "Gemini 3 Pro", "Gemini 3 Flash"  # their displayName in the simulator's catalog
OUTAGE = 0.4  # seconds of each outage window
WAIT = 10.0  # bound of every wait for the conversation to move on (no timing asserts)

HELLO = "Say hello in one short sentence."
RUN = "run: git status"
ASK = "ask: which part should we work on first?"
LONG = "Write a long story about a lighthouse keeper."
BYE = "Thanks, that is all."
TURNS = [HELLO, RUN, ASK, LONG, BYE]

DELTA_TYPES = frozenset({"external_output_text_delta", "external_output_reasoning_delta"})
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
            await gate_answered(1, {"action": "accept"})
            await turn_done(2)
            windows.append(_failed(app) - before)

            assert await session.send(ASK) == "rpc"
            await gate_answered(2, {"action": "accept", "content": {"0": QUESTION_OPTIONS[1]}})
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
    """The bodies but the live deltas, without ``response_id`` and with the elicitation ids by order of
    appearance (digests of the run's uuids)."""
    gates: dict[str, str] = {}
    out = []
    for b in rec.received:
        if b["type"] in DELTA_TYPES:
            continue
        data = {k: v for k, v in b["data"].items() if k != "response_id"}
        if "elicitation_id" in data:
            data["elicitation_id"] = gates.setdefault(data["elicitation_id"], f"<gate{len(gates)}>")
        out.append({**b, "data": data})
    return out


def items(rec: Recording, item_type: str, role: str | None = None) -> list[dict[str, Any]]:
    return [
        b["data"]
        for b in rec.received
        if b["type"] == "external_conversation_item"
        and b["data"]["item_type"] == item_type
        and (role is None or b["data"]["item_data"].get("role") == role)
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


def check_wire_format(rec: Recording, *, all_deltas: bool) -> None:
    """Everything omnigent got is a body omnigent accepts, each item once, in the conversation's order."""
    assert all(real_rules(b) is None for b in rec.received)
    ids = [b["data"]["source_id"] for b in rec.received if "source_id" in b["data"]]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    statuses = [b["data"]["status"] for b in rec.received if b["type"] == "external_session_status"]
    gates = ["running", "waiting", "running"]  # a turn that asks: parked, then answered
    assert statuses == [
        "running",
        "idle",
        *gates,
        "idle",
        *gates,
        "idle",
        "running",
        "idle",
        "running",
        "idle",
    ]
    users = [i["item_data"]["content"][0]["text"] for i in items(rec, "message", "user")]
    assert users == TURNS

    # the model: M20 from the first turn, M71 from the TUI turn on; usage in omnigent's semantics
    changes = [b["data"]["model"] for b in rec.received if b["type"] == "external_model_change"]
    assert changes == [FIRST_NAME, TUI_NAME]  # agy's display names (GetAvailableModels)
    usage = [b["data"] for b in rec.received if b["type"] == "external_session_usage"]
    expected = [[i + c, o, c] for i, o, c in simulated_usage(rec.steps)]
    assert [[u[k] for k in USAGE_FIELDS] for u in usage] == expected
    assert [u["model"] for u in usage] == [FIRST_NAME] * 5 + [TUI_NAME] * 2

    # assistant replies: the scripted texts; each streamed delta comes before its message
    assistant = items(rec, "message", "assistant")
    texts = [a["item_data"]["content"][0]["text"] for a in assistant]
    assert texts[0] == GREETING and texts[3] == LONG_TEXT and "Thanks, that is all." in texts[4]
    assert texts[1].startswith("`git status` ran (exit code 0): On branch main")
    assert texts[2] == f"You chose: {QUESTION_OPTIONS[1]}"
    position = {id(b): i for i, b in enumerate(rec.received)}
    committed_at = {
        b["data"]["message_id"]: position[id(b)]
        for b in rec.received
        if b["type"] == "external_conversation_item" and "message_id" in b["data"]
    }
    by_message = {a["message_id"]: a["item_data"]["content"][0]["text"] for a in assistant}
    text_deltas: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, body in enumerate(rec.received):
        if body["type"] == "external_output_text_delta":
            text_deltas.setdefault(body["data"]["message_id"], []).append((i, body["data"]))
    for message_id, deltas in text_deltas.items():
        indices = [d["index"] for _, d in deltas]
        assert indices == sorted(set(indices)) and all(i < committed_at[message_id] for i, _ in deltas)
        if all_deltas:
            assert indices == list(range(len(deltas)))
            assert "".join(d["delta"] for _, d in deltas) == by_message[message_id]
    if all_deltas:
        assert len(text_deltas.get(assistant[3]["message_id"], [])) > 1, "the long reply was not streamed"

    # tools: each function_call directly followed by its output (same call_id)
    calls, outputs = items(rec, "function_call"), items(rec, "function_call_output")
    assert [c["item_data"]["call_id"] for c in calls] == [o["item_data"]["call_id"] for o in outputs]
    assert [c["item_data"]["name"] for c in calls] == ["run_command", "ask_question"]

    # gates: each parked on the hook under one id, answered, delivered to agy, then resolved
    gate_ids = list(dict.fromkeys(p["elicitation_id"] for p in rec.hook_posts))
    assert len(gate_ids) == 2 and all("/" not in g for g in gate_ids)
    first = {p["elicitation_id"]: p["params"] for p in reversed(rec.hook_posts)}
    assert first[gate_ids[0]]["command"] == "git status"
    assert [
        o["label"] for o in first[gate_ids[1]]["ask_user_question"]["questions"][0]["options"]
    ] == QUESTION_OPTIONS
    resolved = [
        b["data"]["elicitation_id"] for b in rec.received if b["type"] == "external_elicitation_resolved"
    ]
    assert resolved == gate_ids
    run_step = next(s for s in rec.steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND")
    ask_step = next(s for s in rec.steps if s["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION")
    assert run_step["status"] == ask_step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert run_step["completedInteractions"][-1]["response"]["permission"] == {"allow": True}
    assert ask_step["askQuestion"]["questions"][0]["selectedOptionIds"] == ["2"]


# -- the tests ------------------------------------------------------------------------------------


async def test_a_scripted_conversation_arrives_as_the_wire_format() -> None:
    clean = await converse(outage=False)
    check_wire_format(clean, all_deltas=True)
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
    assert stats.dropped == stats.held == 0

    check_wire_format(broken, all_deltas=False)
    # the same committed bodies, exactly, in the same order (usage but its token counts, which
    # check_wire_format compared with each run's own simulator); deltas are live-only
    assert normalized(without_token_counts(committed(broken))) == normalized(
        without_token_counts(committed(clean))
    )
