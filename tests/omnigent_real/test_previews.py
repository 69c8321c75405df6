"""Live previews on the REAL omnigent 0.19.1 server: what a new web subscriber of the session is shown
of a reply's streamed text once the reply is stored.

omnigent matches a preview to its stored message by text (the joined deltas must be the message or
its start), so a preview posted without its first deltas is never retired: every new subscriber sees
it, after the stored message, for good.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable

import pytest

from agy_harness.adapters.sinks.omnigent import OmnigentSink
from agy_harness.ports.events import AssistantMessage, Event, StatusChanged, SubagentStarted, TextDelta
from tests.real_omnigent import create_session

from .helpers import Omnigent, stored_item_id

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT = 30.0
REPLY = ["Here is my ", "answer: ", "done, nothing ", "else is needed."]


def reply_with_a_subagent_starting(main: str) -> list[Event]:
    """A reply of conversation ``main`` streamed while a sub-agent starts (agy lists the child
    mid-reply, so its registration and its first events fall between the reply's deltas), then
    committed: the order the harness delivers it in."""
    sub = f"{main}-child"
    deltas = [
        TextDelta(id=f"{main}/5/text/{i}", cascade_id=main, message_id="bot-1", index=i, delta=d)
        for i, d in enumerate(REPLY)
    ]
    child = [
        SubagentStarted(id=f"{main}/subagent/{sub}", cascade_id=main, child_cascade_id=sub),
        StatusChanged(id=f"{sub}/1/status/running", cascade_id=sub, status="running"),
    ]
    return [
        StatusChanged(id=f"{main}/4/status/running", cascade_id=main, status="running"),
        deltas[0],
        child[0],
        deltas[1],
        child[1],
        *deltas[2:],
        TextDelta(
            id=f"{main}/5/text/final", cascade_id=main, message_id="bot-1", index=4, delta="", final=True
        ),
        AssistantMessage(id=f"{main}/5/assistant", cascade_id=main, message_id="bot-1", text="".join(REPLY)),
        StatusChanged(id=f"{main}/5/status/idle", cascade_id=main, status="idle"),
    ]


async def previews(omni: Omnigent, session_id: str) -> list[str]:
    """The reply previews a new web subscriber of the session is shown."""
    snapshot = await omni.snapshot_events(session_id)
    return [e["delta"] for e in snapshot if e.get("type") == "response.output_text.delta"]


async def shown_live(omni: Omnigent, session_id: str, deliver: Callable[[], Awaitable[None]]) -> list[str]:
    """The reply previews a web subscriber watching the session is sent while ``deliver`` runs, up
    to the stored assistant message (which omnigent sends after them)."""
    subscribed = asyncio.Event()

    async def watch() -> list[str]:
        shown: list[str] = []
        async with omni.http.stream("GET", f"/v1/sessions/{session_id}/stream", timeout=None) as response:
            lines = response.aiter_lines()
            try:
                async for line in lines:
                    subscribed.set()  # the stream's first frame arrived
                    if not line.startswith("data:") or line[5:].strip() in ("", "[DONE]"):
                        continue
                    event = json.loads(line[5:])
                    if event.get("type") == "response.output_text.delta":
                        shown.append(event["delta"])
                    item = event.get("item") or {}
                    if event.get("type") == "response.output_item.done" and item.get("role") == "assistant":
                        break
            finally:
                await lines.aclose()  # type: ignore[attr-defined]
        return shown

    async with asyncio.timeout(WAIT):
        watcher = asyncio.create_task(watch())
        await subscribed.wait()
        await deliver()
        return await watcher


async def test_a_reply_delivered_with_its_commit_shows_no_preview_when_a_subagent_starts_midway(
    omni: Omnigent,
) -> None:
    """One delivery holds the reply's deltas and its message (an attach's backlog): none of its
    deltas is shown, also when a sub-agent's events split the reply's run of events (the deltas after
    the split went out: subscribers saw a preview start mid-sentence)."""
    sid = await asyncio.to_thread(create_session, omni.base_url)
    events = reply_with_a_subagent_starting(str(uuid.uuid4()))
    async with OmnigentSink(omni.base_url, sid) as sink:

        async def deliver() -> None:
            assert await sink.deliver(events) == len(events)

        assert await shown_live(omni, sid, deliver) == []
    assert await previews(omni, sid) == []
    stored = [i for i in await omni.items(sid) if i["type"] != "resource_event"]
    assert [(i["type"], i["role"], i["content"][0]["text"]) for i in stored] == [
        ("message", "assistant", "".join(REPLY))
    ]
    assert len(await omni.children(sid)) == 1


async def test_a_redelivered_reply_leaves_no_preview_when_a_subagent_started_midway(omni: Omnigent) -> None:
    """The reply streamed live (event by event: the preview grows, then its message retires it), then
    everything is delivered again by a new sink (a restart): the session shows no preview and stores
    no row twice."""
    sid = await asyncio.to_thread(create_session, omni.base_url)
    events = reply_with_a_subagent_starting(main := str(uuid.uuid4()))
    async with OmnigentSink(omni.base_url, sid) as live:
        for event in events:
            assert await live.deliver([event]) == 1
    assert await previews(omni, sid) == []
    before = [i["id"] for i in await omni.items(sid)]
    assert stored_item_id(sid, f"{main}/5/assistant") in before
    async with OmnigentSink(omni.base_url, sid, cascade_id=main) as again:
        assert await again.deliver(events) == len(events)
    assert await previews(omni, sid) == []
    assert [i["id"] for i in await omni.items(sid)] == before
