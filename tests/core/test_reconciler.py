"""Streaming, dedup, lifecycle and bad input through the reconciler."""

from __future__ import annotations

import logging
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agy_harness.core.reconciler import MapperState, Reconciler
from agy_harness.ports.events import Event, TextDelta

from .fixtures import CASCADE, TRAJ, fixture

TEXT = fixture("stream_planner_text_done")["plannerResponse"]["modifiedResponse"]


def generating(text: str, thinking: str = "", index: int = 13) -> dict[str, Any]:
    """A stream-projection GENERATING frame of the recorded planner step, cut at ``text``."""
    step = fixture("stream_planner_text_done")
    step["status"] = "CORTEX_STEP_STATUS_GENERATING"
    step["metadata"].pop("modelUsage")
    step["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = index
    body = step["plannerResponse"]
    body["modifiedResponse"] = text
    if thinking:
        body["thinking"] = thinking
    return step


def types(events: list[Event]) -> list[str]:
    return [e.type for e in events]


def deltas(events: list[Event]) -> list[TextDelta]:
    return [e for e in events if isinstance(e, TextDelta)]


def test_generating_frames_stream_deltas_then_one_committed_message() -> None:
    r = Reconciler(CASCADE)
    out = r.feed(generating(TEXT[:10], thinking="Let me"))
    out += r.feed(generating(TEXT[:25], thinking="Let me look"))
    out += r.feed(generating(TEXT[:25], thinking="Let me look"))  # the same snapshot again: nothing
    out += r.feed(fixture("stream_planner_text_done"))
    assert types(out) == [
        "status",
        "reasoning_delta",
        "text_delta",
        "reasoning_delta",
        "text_delta",
        "text_delta",
        "assistant_message",
        "usage",
        "status",
    ]
    ds = deltas(out)
    assert [(d.delta, d.index, d.final) for d in ds] == [
        (TEXT[:10], 0, False),
        (TEXT[10:25], 1, False),
        (TEXT[25:], 2, True),
    ]
    assert {d.message_id for d in ds} == {"bot-8aa1ae92-622b-46ad-b13b-f6ee0bbbf11b"}
    assert [e.delta for e in out if e.type == "reasoning_delta"] == ["Let me", " look"]  # type: ignore[union-attr]
    assert [e.started for e in out if e.type == "reasoning_delta"] == [True, False]  # type: ignore[union-attr]
    assert len({e.id for e in out}) == len(out)


def test_a_rewrite_that_does_not_extend_sends_nothing() -> None:
    r = Reconciler(CASCADE)
    r.feed(generating("Hello wor"))
    assert r.feed(generating("Hello, wo")) == []  # rewritten, shorter: nothing
    out = r.feed(generating("Hello world"))
    assert [(d.delta, d.index) for d in deltas(out)] == [("ld", 1)]


def test_the_poll_path_commits_without_deltas() -> None:
    out = Reconciler(CASCADE).feed(fixture("stream_planner_text_done"))
    assert deltas(out) == []
    assert types(out) == ["status", "assistant_message", "usage", "status"]


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=200), st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_any_prefix_growing_sequence_reconstructs_the_committed_text(text: str, cuts: list[int]) -> None:
    r = Reconciler(CASCADE)
    out: list[Event] = []
    for cut in sorted(cuts):
        out += r.feed(generating(text[:cut]))
    done = fixture("stream_planner_text_done")
    done["plannerResponse"]["modifiedResponse"] = text
    out += r.feed(done)
    ds = deltas(out)
    committed = [e for e in out if e.type == "assistant_message"]
    assert len(committed) == 1 and committed[0].text == text  # type: ignore[union-attr]
    if ds:
        assert "".join(d.delta for d in ds) == text
        assert [d.index for d in ds] == list(range(len(ds)))
        assert [d.final for d in ds] == [False] * (len(ds) - 1) + [True]


def test_settled_steps_are_committed_once_across_projections_and_replays() -> None:
    r = Reconciler(CASCADE)
    first = r.feed_all([fixture("run_command_done"), fixture("planner_response_text")])
    assert types(first) == ["status", "tool_call", "tool_result", "assistant_message", "usage", "status"]
    # a poll after the stream, a stream replay after a reconnect, a late GENERATING frame: nothing again
    again = r.feed_all(
        [
            fixture("stream_run_command_done"),
            fixture("run_command_done"),
            fixture("planner_response_text"),
            generating("Hello", index=2),
        ]
    )
    assert again == []


def test_a_step_of_the_known_trajectory_is_committed_under_its_own_key_only() -> None:
    """The committed set (saved by a cursor store, one journal record a key) holds one key a step:
    a transcript read later resolves its steps to the known trajectory, so no placeholder alias is kept
    for it; a step the transcript committed before the trajectory was known is still recognised."""
    r = Reconciler(CASCADE)
    r.feed_all([fixture("run_command_done"), fixture("planner_response_text")])
    assert r.state.committed == {f"{TRAJ}/6", f"{TRAJ}/2"}
    early = Reconciler(CASCADE)
    transcript = fixture("run_command_done")
    transcript["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"] = f"transcript:{CASCADE}"
    assert types(early.feed(transcript)) == ["status", "tool_call", "tool_result"]  # trajectory not known yet
    assert early.feed(fixture("planner_response_text")) != []  # teaches the trajectory
    assert early.feed(fixture("run_command_done")) == []  # the transcript's step 6, under its real key
    assert early.feed(transcript) == []


def test_restored_state_resumes_without_repeats_and_keeps_usage_totals() -> None:
    r = Reconciler(CASCADE)
    r.feed(fixture("planner_response_text"))
    r.feed(generating(TEXT[:10]))
    saved = MapperState.model_validate_json(r.state.model_dump_json())
    r2 = Reconciler(CASCADE, saved)
    assert r2.feed(fixture("planner_response_text")) == []
    out = r2.feed(fixture("stream_planner_text_done"))
    ds = deltas(out)
    assert [(d.delta, d.index, d.final) for d in ds] == [(TEXT[10:], 1, True)]
    [usage] = [e for e in out if e.type == "usage"]
    assert usage.cumulative_input_tokens == 17161 + 13614  # type: ignore[union-attr]


def test_whole_turn_lifecycle() -> None:
    r = Reconciler(CASCADE)
    turn = [fixture(n) for n in ("user_input", "conversation_history", "planner_response_text", "checkpoint")]
    out = r.feed_all(turn)
    assert types(out) == ["status", "model_change", "user_message", "assistant_message", "usage", "status"]
    assert [e.status for e in out if e.type == "status"] == ["running", "idle"]  # type: ignore[union-attr]
    # a tool turn: the tool-dispatch planner does not close it; the gate opens and withdraws
    tool_turn = [
        fixture("planner_response_tool_call_run_command"),
        fixture("run_command_waiting"),
        fixture("run_command_done"),
    ]
    out = r.feed_all(tool_turn)
    assert types(out) == ["status", "usage", "gate_opened", "gate_withdrawn", "tool_call", "tool_result"]
    assert r.state.status == "running"
    # the same model again is no model change
    user2 = fixture("user_input")
    user2["metadata"]["executionId"] = "second-turn"
    out = r.feed(user2)
    assert types(out) == ["status", "status", "user_message"]
    assert [e.status for e in out if e.type == "status"] == ["idle", "running"]  # type: ignore[union-attr]
    assert r.observe_idle() and r.state.status == "idle"
    assert r.observe_idle() == []


def test_user_text_from_items_and_older_model_shape() -> None:
    step = fixture("user_input")
    del step["userInput"]["userResponse"]
    step["userInput"]["items"] = [{"text": "a"}, {"text": "b"}, "junk"]
    cfg = step["userInput"]["userConfig"]["plannerConfig"]
    del cfg["planModel"]
    cfg["requestedModel"] = {"model": "MODEL_OLD"}
    out = Reconciler(CASCADE).feed(step)
    assert [(e.type, getattr(e, "text", getattr(e, "model", None))) for e in out[1:]] == [
        ("model_change", "MODEL_OLD"),
        ("user_message", "ab"),
    ]


def test_planner_error_is_visible_and_fails_the_turn() -> None:
    r = Reconciler(CASCADE)
    r.feed(generating("partial"))
    step = fixture("stream_planner_text_done")
    step["status"] = "CORTEX_STEP_STATUS_ERROR"
    step["plannerResponse"]["modifiedResponse"] = "partial"
    out = r.feed(step)
    assert types(out) == ["text_delta", "assistant_message", "usage", "status"]
    assert out[0].final is True  # type: ignore[union-attr]
    assert out[1].is_error and "[error]" in out[1].text  # type: ignore[union-attr]
    assert out[-1].status == "failed"  # type: ignore[union-attr]


def test_unknown_types_tool_or_not() -> None:
    step = fixture("stream_view_file_done")
    step["type"] = "CORTEX_STEP_TYPE_SOMETHING_NEW"
    step["somethingNew"] = step.pop("viewFile")
    out = Reconciler(CASCADE).feed(step)
    assert types(out) == ["status", "tool_call", "tool_result"]
    assert out[1].name == "something_new"  # type: ignore[union-attr]
    assert out[1].arguments == {"AbsolutePath": "/Users/bryanli/.gemini/antigravity-cli/scratch/package.json"}  # type: ignore[union-attr]
    plain = fixture("checkpoint")
    plain["type"] = "CORTEX_STEP_TYPE_UNHEARD_OF"
    assert Reconciler(CASCADE).feed(plain) == []


def test_bad_input_is_skipped_with_a_log_line_never_raised(caplog: Any) -> None:
    r = Reconciler(CASCADE)
    weird_meta = fixture("planner_response_text")
    weird_meta["metadata"]["modelUsage"] = "not-a-dict"
    weird_meta["plannerResponse"] = ["not", "a", "dict"]
    no_index = fixture("run_command_done")
    del no_index["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"]
    string_index = fixture("run_command_done")
    string_index["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = "7"
    bad_args = fixture("run_command_done")
    bad_args["metadata"]["toolCall"]["argumentsJson"] = "{not json"
    bad_args["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 8
    with caplog.at_level(logging.WARNING):
        out = r.feed_all(
            [
                None,
                42,
                "step",
                [],
                {},
                {"type": 5},
                {"type": "CORTEX_STEP_TYPE_X"},
                {"type": "CORTEX_STEP_TYPE_X", "metadata": "m"},
                weird_meta,
                no_index,
                string_index,
                bad_args,
            ]
        )
    assert r.skipped == 8
    assert "not a JSON object" in caplog.text and "without a type" in caplog.text
    calls = [e for e in out if e.type == "tool_call"]
    assert [c.call_id for c in calls] == [f"{TRAJ}/0", f"{TRAJ}/7", f"{TRAJ}/8"]  # type: ignore[union-attr]
    assert calls[2].arguments == {
        "CommandLine": "pwd",
        "Cwd": "/Users/bryanli/.gemini/antigravity-cli/scratch",  # type: ignore[union-attr]
        "WaitMsBeforeAsync": 2000,
    }
    # the planner with an unreadable body still closes its turn state sanely (no text: a dispatch)
    assert r.state.status == "running"


def test_withdrawal_reasons_and_a_denied_command() -> None:
    r = Reconciler(CASCADE)
    r.feed(fixture("run_command_waiting"))
    timed_out = r.feed(fixture("run_command_error"))
    assert timed_out[0].type == "gate_withdrawn" and timed_out[0].reason == "timed out"  # type: ignore[union-attr]
    assert "did not complete" in timed_out[-1].output  # type: ignore[union-attr]
    denied = fixture("run_command_error")
    denied["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 8
    denied["completedInteractions"] = [
        {
            "request": denied["requestedInteraction"],
            "response": {"trajectoryId": TRAJ, "stepIndex": 8, "permission": {}},
        }
    ]
    waiting = fixture("run_command_waiting")
    waiting["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 8
    r.feed(waiting)
    out = r.feed(denied)
    assert out[0].reason == "answered"  # type: ignore[union-attr]
    assert out[-1].output == "run_command was not run: permission denied"  # type: ignore[union-attr]
    assert out[-1].is_error  # type: ignore[union-attr]
    answered = r.feed(fixture("run_command_done"))  # step 6 already settled: nothing
    assert answered == []


def test_without_a_cursor_journal_the_reconciler_keeps_no_commit_log() -> None:
    """The log of newly committed keys exists for a journal to take; without one it would only grow."""
    r = Reconciler(CASCADE)
    r.feed_all([fixture("user_input"), fixture("planner_response_text"), fixture("run_command_done")])
    assert r.state.committed and r.committed_log is None
    r.committed_log = []  # a journal took everything so far: from now on only what is new
    done = fixture("run_command_done")
    done["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] = 99
    r.feed(done)
    assert r.committed_log[0] == f"{TRAJ}/99" and all(k.endswith("/99") for k in r.committed_log)
