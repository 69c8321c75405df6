"""core/turns.py: turn boundaries, per-turn usage and streamed-vs-committed text, worked out once."""

from __future__ import annotations

from agy_harness.core.turns import (
    Commit,
    Replies,
    TurnEnded,
    Turns,
    TurnStarted,
    TurnUsage,
    UsageTotals,
    spent,
)
from agy_harness.ports.events import ModelChanged, StatusChanged, TextDelta, Usage

C = "c"


def usage(i: int, inp: int, out: int, cache: int = 0, model: str = "") -> Usage:
    return Usage(
        id=f"u{i}",
        cascade_id=C,
        cumulative_input_tokens=inp,
        cumulative_output_tokens=out,
        cumulative_cache_read_input_tokens=cache,
        model=model,
    )


def status(i: int, s: str, cascade: str = C, reason: str = "") -> StatusChanged:
    return StatusChanged(id=f"s{i}", cascade_id=cascade, status=s, reason=reason)  # type: ignore[arg-type]


def test_cumulative_totals_become_per_turn_usage_with_cache_reads_apart() -> None:
    before = UsageTotals.of(usage(1, 100, 10, 1000))
    after = before.copy()
    after.update(usage(2, 150, 40, 1800, "M"))
    assert spent(before, after) == TurnUsage(input=50, output=30, cache_read=800, last_prompt=850, model="M")
    assert spent(before, after).prompt == 850  # omnigent's input: cache reads included
    assert before.input == 100  # the copy is its own
    assert spent(after, before) == TurnUsage(0, 0, 0, before.last_prompt)  # never negative


def test_turn_boundaries_come_from_status_edges() -> None:
    turns = Turns(C)
    assert turns.feed(usage(1, 10, 1)) is None
    started = turns.feed(status(1, "running"))
    assert isinstance(started, TurnStarted) and started.at.input == 10
    assert turns.feed(status(2, "running")) is None  # already running: no second start
    turns.feed(ModelChanged(id="m", cascade_id=C, model="M2"))
    turns.feed(usage(2, 40, 5, 7))
    assert turns.feed(status(3, "idle", cascade="a sub-agent")) is None  # another conversation's
    ended = turns.feed(status(4, "failed", reason="quota"))
    assert ended == TurnEnded(C, "failed", "quota", TurnUsage(30, 4, 7, 37, "M2"), reported=True)
    replayed = turns.feed(status(5, "idle"))  # an idle with no turn seen starting
    assert replayed == TurnEnded(C, "idle", "", None, reported=True)


def test_a_turn_without_a_usage_report_says_so() -> None:
    turns = Turns()  # every conversation's events
    turns.feed(status(1, "running", cascade="x"))
    ended = turns.feed(status(2, "idle", cascade="x"))
    assert isinstance(ended, TurnEnded) and not ended.reported and ended.spent == TurnUsage(0, 0, 0)


def delta(i: int, text: str, mid: str = "m") -> TextDelta:
    return TextDelta(id=f"{mid}/{i}", cascade_id=C, delta=text, message_id=mid, index=i)


def test_a_committed_message_retires_its_stream_and_says_what_it_did_not_show() -> None:
    replies = Replies()
    assert replies.delta("m", 0, "Hel") == "Hel"
    assert replies.delta("m", 0, "Hel") is None  # a replayed delta
    assert replies.delta("m", 1, "lo") == "lo"
    assert replies.streaming("m") and replies.shown("m") == "Hello"
    commit = replies.commit("m", "Hello, world")
    assert commit == Commit("Hello, world", "Hello") and commit.rest == ", world" and not commit.diverged
    assert replies.committed("m") and not replies.streaming("m")
    assert Commit("Hi", None).rest == "Hi"  # nothing streamed: the whole text
    assert Commit("Hi", "Hi").rest == ""  # a complete stream: nothing more
    rewritten = Commit("Goodbye", "Hello")
    assert rewritten.diverged and rewritten.rest == ""


def test_a_thoughts_stream_keeps_no_text() -> None:
    thoughts = Replies(keep_text=False)
    assert thoughts.delta("r", 0, "thinking") == "thinking"
    assert thoughts.delta("r", 0, "thinking") is None
    assert thoughts.shown("r") == "" and not thoughts.streaming("r")
