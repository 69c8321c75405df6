"""An older agy (no StreamAgentStateUpdates, no SendUserCascadeMessage): the version gate picks the
poll and tmux turn-send, and a full conversation commits the same events as on the full surface."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libtmux

from agy_harness.composition.root.session import open_session
from agy_harness.ports.protocols import GateAnswer
from tests.fakes import RecordingSink
from tests.integration.helpers import FAST, run_turn, signature, texts_by_message

from .conftest import start_tui

TURNS = ["Say hello in one short sentence.", "run: git status", "list the directory"]


async def conversation(server: libtmux.Server, tmp_path: Path, profile: str) -> tuple[RecordingSink, Any]:
    tui = await start_tui(server, tmp_path, profile=profile)
    sink = RecordingSink()
    await sink.answers.put(GateAnswer(allow=True))
    async with open_session(
        pids=[tui.pid],
        cascade_id=tui.cascade_id,
        tmux_target=tui.pane_id,
        tmux_server=server,
        sink=sink,
        options=FAST,
        poll_interval=0.05,
        version_text=profile,
    ) as session:
        for text in TURNS:
            await run_turn(session, sink, text, timeout=20)
        return sink, (
            session.capabilities,
            [s.name for s in session.harness.sources],
            [t.name for t in session.harness.turn_senders],
        )


async def test_old_profile_runs_a_full_conversation_on_poll_and_tmux(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    old, (caps, sources, senders) = await conversation(tmux_server, tmp_path, "1.0.4")
    assert (caps.version, caps.stream, caps.rpc_turns) == ((1, 0, 4), False, False)
    assert sources == ["poll"] and senders == ["tmux"]
    new, (caps, sources, senders) = await conversation(tmux_server, tmp_path, "1.0.10")
    assert (
        (caps.stream, caps.rpc_turns) == (True, True)
        and sources[0] == "stream"
        and senders == ["rpc", "tmux"]
    )
    assert signature(old.events) == signature(new.events)
    assert [e.text for e in old.events if e.type == "user_message"] == TURNS  # type: ignore[union-attr]
    # the poll sees GENERATING snapshots too: its live text blocks close onto the committed message
    streamed = texts_by_message(old.events)
    for message in (e for e in old.events if e.type == "assistant_message"):
        assert streamed.get(message.message_id, message.text) == message.text  # type: ignore[union-attr]
