"""Issue #20, case 7: an event omnigent refuses for its content (a sub-agent it will not register) is
quarantined with a notice; it used to be retried forever under the emitter's delivery lock, and no
later event of the session reached omnigent. A transient failure is still retried: nothing is lost."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agy_harness.adapters.sinks.omnigent import elicitation_id
from agy_harness.adapters.sinks.omnigent.transport import MAX_ANSWER, BoundedTransport
from agy_harness.composition.service.conversation import Conversation, HarnessOptions, HarnessStats
from agy_harness.composition.service.emitter import Emitter
from agy_harness.ports.events import StatusChanged, SubagentStarted, UserMessage
from tests.fakes import MemorySnapshot

from .omnigent_app import OmnigentApp
from .samples import PERMISSION_GATE, C
from .test_omnigent import make_sink

FAST = HarnessOptions(sink_retry=0.01, max_backoff=0.05)


def user(n: int, cascade: str = C) -> UserMessage:
    return UserMessage(id=f"{cascade}/u:{n}/user", cascade_id=cascade, text=f"turn {n}")


def refuse_registration(body: dict[str, object]) -> int | None:
    return 422 if body.get("type") == "external_antigravity_subagent_start" else None


async def test_a_sub_agent_omnigent_will_not_register_is_quarantined_and_the_session_goes_on(
    omnigent: OmnigentApp,
) -> None:
    omnigent.reject = refuse_registration
    start = SubagentStarted(id=f"{C}/5/sub", cascade_id=C, child_cascade_id="kid", parent_call_id="t/5")
    async with make_sink(omnigent) as sink:
        stats = HarnessStats()
        emitter = Emitter(Conversation(C), snapshot=MemorySnapshot(), sink=sink, options=FAST, stats=stats)
        async with asyncio.timeout(10):
            await emitter.emit([user(1)])
            await emitter.emit([start])  # refused for good: quarantined
            await emitter.emit(
                [user(1, "kid"), StatusChanged(id="kid/9/idle", cascade_id="kid", status="idle")]
            )
            await emitter.emit([user(2)])  # the session's later events arrive
    assert user(2).id in " ".join(omnigent.source_ids())
    assert start.id in stats.quarantined
    items = [b["data"]["item_data"] for b in omnigent.received if b["type"] == "external_conversation_item"]
    notices = [i["message"] for i in items if "refused" in str(i.get("message", ""))]
    assert any(start.id in text for text in notices)  # the user is told what was left out


async def test_a_registration_that_fails_for_a_while_is_retried_not_dropped(omnigent: OmnigentApp) -> None:
    start = SubagentStarted(id=f"{C}/5/sub", cascade_id=C, child_cascade_id="kid", parent_call_id="t/5")
    async with make_sink(omnigent) as sink:
        emitter = Emitter(Conversation(C), snapshot=MemorySnapshot(), sink=sink, options=FAST)
        omnigent.fail_next = 60  # 503s for longer than one delivery's retry deadline
        async with asyncio.timeout(20):
            await emitter.emit([user(1), start, user(1, "kid")])
        assert sink.child_session("kid") == "child-kid"
    assert omnigent.child_received["child-kid"]  # delivered once omnigent recovered
    assert not emitter.stats.quarantined


async def test_an_answer_over_the_limit_is_not_read_and_the_gate_is_asked_again(
    omnigent: OmnigentApp, caplog: pytest.LogCaptureFixture
) -> None:
    """Every body read from omnigent is bounded (16 MiB): a 20 MB verdict is a logged read error,
    never an answer; the gate stays asked (the fake, like omnigent, hands the same verdict again)."""
    async with make_sink(omnigent) as sink:
        ask = asyncio.create_task(sink.ask(PERMISSION_GATE))
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) == 1)
        await omnigent.push_answer({"action": "accept", "padding": "x" * (20 << 20)})
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) >= 3, 10)
        assert not ask.done()  # a verdict that was not read is not an allow
        ask.cancel()
        await asyncio.gather(ask, return_exceptions=True)
    assert any("over 16777216 bytes" in r.getMessage() for r in caplog.records)


#: an "accept" padded to a few KiB: the fake sends it as json.dumps(...) gives it, byte for byte
PADDED_ACCEPT = {"action": "accept", "padding": "x" * 4000}
PADDED_SIZE = len(json.dumps(PADDED_ACCEPT).encode())


async def test_an_accept_one_byte_over_the_limit_is_a_logged_error_and_never_an_allow(
    omnigent: OmnigentApp, caplog: pytest.LogCaptureFixture
) -> None:
    """With the limit injected (PADDED_SIZE - 1), the padded accept is never read: a logged error,
    the gate asked again; the decline given later is the answer, so the accept never was one."""
    assert MAX_ANSWER == 16 << 20  # the README's number, the sink's default
    eid = elicitation_id(PERMISSION_GATE.gate_id)
    limit = PADDED_SIZE - 1
    async with (
        httpx.AsyncClient(transport=BoundedTransport(limit=limit)) as client,
        make_sink(omnigent, client=client) as sink,
    ):
        ask = asyncio.create_task(sink.ask(PERMISSION_GATE))
        await omnigent.push_answer(PADDED_ACCEPT, eid)
        await omnigent.wait_for(lambda: len(omnigent.hook_posts) >= 3)  # asked again, and again
        assert not ask.done()
        await omnigent.push_answer({"action": "decline"}, eid)
        async with asyncio.timeout(5):
            answer = await ask
    assert answer.allow is False
    assert any(f"over {limit} bytes; not read" in r.getMessage() for r in caplog.records)


async def test_an_accept_of_exactly_the_limit_is_read(omnigent: OmnigentApp) -> None:
    """The bound is "up to" the limit: the same padded accept, with the limit at its size, allows."""
    async with (
        httpx.AsyncClient(transport=BoundedTransport(limit=PADDED_SIZE)) as client,
        make_sink(omnigent, client=client) as sink,
    ):
        ask = asyncio.create_task(sink.ask(PERMISSION_GATE))
        await omnigent.push_answer(PADDED_ACCEPT, elicitation_id(PERMISSION_GATE.gate_id))
        async with asyncio.timeout(5):
            answer = await ask
    assert answer.allow is True and len(omnigent.hook_posts) == 1


async def test_the_sinks_transport_speaks_plain_http_and_verifies_https(
    omnigent: OmnigentApp,
) -> None:
    """The sink's own transport (one per scheme, made at its first request): ``http://`` (the loopback
    omnigent) answers; an ``https://`` peer whose certificate no store vouches for (the simulator's
    self-signed one) is refused in the TLS handshake, never read."""
    from agy_harness.adapters.simulator.tls import server_context

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_context(["http/1.1"]))
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(transport=BoundedTransport()) as client:
            plain = await client.get(f"{omnigent.base_url}/api/sessions/none")
            assert plain.status_code == 404 and omnigent.base_url.startswith("http://")
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(f"https://127.0.0.1:{port}/")
    finally:
        server.close()
