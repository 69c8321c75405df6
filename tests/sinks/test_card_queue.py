"""The queue sink's one exception to "in order" (issue #35, case 8): a card of the newest turn is not
queued behind unread cards of other turns; those move, with every unread event of their steps, to
just after it. Nothing is dropped; nothing else changes order."""

from __future__ import annotations

from agy_harness.adapters.sinks.queue import QueueSink
from agy_harness.ports.events import Event, GateOpened, GateWithdrawn, Notice, StatusChanged, UserMessage

T = "traj"


def _user(execution_id: str) -> UserMessage:
    return UserMessage(id=f"u-{execution_id}", cascade_id="c", step_key=f"{T}/u:{execution_id}", text="hi")


def _card(index: int, turn: str, *, answerable: bool = True) -> GateOpened:
    return GateOpened(
        id=f"g{index}",
        cascade_id="c",
        step_key=f"{T}/{index}",
        gate_id=f"{T}/{index}/gate",
        kind="permission" if answerable else "other",
        trajectory_id=T,
        step_index=index,
        answerable=answerable,
        turn=turn,
    )


def _gone(index: int) -> GateWithdrawn:
    return GateWithdrawn(id=f"w{index}", cascade_id="c", step_key=f"{T}/{index}", gate_id=f"{T}/{index}/gate")


async def _read(events: list[Event]) -> list[str]:
    sink = QueueSink()
    await sink.deliver(events)
    return [sink.queue.get_nowait().id for _ in range(sink.queue.qsize())]


async def test_the_newest_turns_card_goes_before_unread_cards_of_other_turns_with_their_steps() -> None:
    running = StatusChanged(id="s", cascade_id="c", status="running")
    note = Notice(id="n", cascade_id="c", step_key=f"{T}/5", text="about bogus 5")
    order = await _read(
        [_user("a"), _card(5, "x"), note, _card(6, "y"), _gone(5), running, _user("b"), _card(9, "b")]
    )
    # the user message and the status keep their place; the card of turn b comes before 5 and 6, which
    # keep their own order (5's card, its notice, its withdrawal after it)
    assert order == ["u-a", "s", "u-b", "g9", "g5", "n", "g6", "w5"]


async def test_nothing_moves_without_an_executionid_or_for_the_same_turn_or_already_read_cards() -> None:
    assert await _read([_user("b"), _card(5, "x"), _card(9, "")]) == ["u-b", "g5", "g9"]  # no turn named
    assert await _read([_user("b"), _card(5, ""), _card(9, "b")]) == ["u-b", "g5", "g9"]  # nor moved
    assert await _read([_user("b"), _card(5, "b"), _card(9, "b")]) == ["u-b", "g5", "g9"]  # one turn
    assert await _read([_user("t:2026"), _card(5, "x"), _card(9, "t:2026")]) == ["u-t:2026", "g5", "g9"]
    # a newer turn without an id: the turn before it is no longer the running one
    assert await _read([_user("a"), _card(5, "x"), _user("t:2026"), _card(9, "a")]) == [
        "u-a",
        "g5",
        "u-t:2026",
        "g9",
    ]
    # a card agy takes no answer for here ("other": the notice says answer in agy's terminal) stays put
    assert await _read([_card(5, "x", answerable=False), _user("b"), _card(9, "b")]) == ["g5", "u-b", "g9"]
    # a card of another turn after the newest turn's card: in order
    assert await _read([_user("b"), _card(9, "b"), _card(11, "x")]) == ["u-b", "g9", "g11"]
    sink = QueueSink()  # a card already read is not taken back
    await sink.deliver([_user("b"), _card(5, "x")])
    assert [sink.queue.get_nowait().id for _ in range(2)] == ["u-b", "g5"]
    await sink.deliver([_card(9, "b")])
    assert sink.queue.get_nowait().id == "g9" and sink.queue.deferred == 0
