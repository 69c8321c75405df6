"""A gate's card that omnigent will not take, against the REAL omnigent 0.19.1 server (issue #35 case 7's
neighbour: the sub-agent start was poisoned there; here the elicitation hook of one request is).

A fault-injecting proxy in front of the real server answers the hook for the ``rm -rf build`` request
with a persistent 503, or a 422, while omnigent takes every other body. Before: nothing at all showed in
the omnigent session (no card, no item: the session looked "running" while agy waited on an approval),
the 503 retried silently forever, and after the 422 the gate was dropped with a log line.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.sinks.omnigent import OmnigentSink, RetryPolicy
from agy_harness.composition.root.session import open_session
from tests.real_omnigent import create_session

from .helpers import FAST, Omnigent, Tee

pytestmark = pytest.mark.asyncio(loop_scope="module")
WAIT = 60.0
BOUNDED = RetryPolicy(initial=0.02, max_delay=0.1, deadline=0.5)


class CardProxy(httpx.AsyncBaseTransport):
    """In front of the real server: the hook for a request naming ``rm -rf`` gets ``status`` while
    ``poisoned`` holds; everything else goes through."""

    def __init__(self, status: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.status = status
        self.poisoned = True
        self.hits = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        hook = self.poisoned and request.method == "POST" and "/hooks/" in request.url.path
        if hook and b"rm -rf" in await request.aread():
            self.hits += 1
            return httpx.Response(self.status, json={"error": "injected"}, request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def until(condition: Any, timeout: float = WAIT) -> None:
    async with asyncio.timeout(timeout):
        while not await condition():
            await asyncio.sleep(0.05)


def _errors(items: list[dict[str, Any]], code: str) -> list[str]:
    """The messages of the session's error items of ``code``."""
    return [str(i.get("message", "")) for i in items if i.get("code") == code]


async def test_a_card_omnigent_answers_only_with_5xx_is_told_once_and_still_tried(omni: Omnigent) -> None:
    sid = await asyncio.to_thread(create_session, omni.base_url)
    proxy = CardProxy(503)
    async with (
        httpx.AsyncClient(transport=proxy) as client,
        Simulator(profile="1.0.10", gate_timeout=None, pace=0.02) as sim,
        OmnigentSink(omni.base_url, sid, client=client, retry=BOUNDED) as sink,
        open_session(port=sim.port, cascade_id=sim.cascade_id, sink=Tee(sink), options=FAST) as s,
    ):
        await s.send("run `rm -rf build`")

        async def told() -> bool:
            return bool(_errors(await omni.items(sid), "agy_card_unshown"))

        await until(told)  # past the bounded retry's deadline: one error item in the session
        hits = proxy.hits
        await until(lambda: _more(proxy, hits + 10))  # still tried, and not told again
        (text,) = _errors(await omni.items(sid), "agy_card_unshown")
        assert "rm -rf build" in text and "HTTP 503" in text and "agy's terminal" in text
        proxy.poisoned = False  # omnigent takes it now: the card shows, the answer goes through
        card = await omni.wait_pending(sid, timeout=WAIT)
        r = await omni.resolve(sid, card["elicitation_id"], {"action": "accept"})
        assert r.status_code == 202, r.text
        await until(lambda: _ran(sim, "rm -rf build"))
    assert sink.stats.unshown == 1


async def test_a_card_omnigent_refuses_with_a_4xx_is_told_and_agys_terminal_answers_it(
    omni: Omnigent,
) -> None:
    sid = await asyncio.to_thread(create_session, omni.base_url)
    proxy = CardProxy(422)
    async with (
        httpx.AsyncClient(transport=proxy) as client,
        Simulator(profile="1.0.10", gate_timeout=None, pace=0.02) as sim,
        OmnigentSink(omni.base_url, sid, client=client, retry=BOUNDED) as sink,
        open_session(port=sim.port, cascade_id=sim.cascade_id, sink=Tee(sink), options=FAST) as s,
    ):
        await s.send("run `rm -rf build`")

        async def told() -> bool:
            return any("could not show" in t for t in _errors(await omni.items(sid), "agy_harness_notice"))

        await until(told)
        [text] = [t for t in _errors(await omni.items(sid), "agy_harness_notice") if "could not show" in t]
        assert "rm -rf build" in text and "422" in text and "agy's terminal" in text
        await sim.resolve_in_terminal(kind="permission", accept=False)  # the human answers there
        await until(lambda: _status(sim))
    assert proxy.hits == 1 and sim.executed == []


async def _more(proxy: CardProxy, n: int) -> bool:
    return proxy.hits >= n


async def _ran(sim: Simulator, command: str) -> bool:
    return any(c == command for c, _ in sim.executed)


async def _status(sim: Simulator) -> bool:
    return not sim.is_running(sim.cascade_id)
