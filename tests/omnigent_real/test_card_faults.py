"""A gate's card that omnigent will not take, against the REAL omnigent 0.19.1 server (issue #35 case 7's
neighbour: the sub-agent start was poisoned there; here the elicitation hook of one request is).

A fault-injecting proxy in front of the real server answers the hook for the ``rm -rf build`` request
with a persistent 503, or a 422, while omnigent takes every other body. Before: nothing at all showed in
the omnigent session (no card, no item: the session looked "running" while agy waited on an approval),
the 503 retried silently forever, and after the 422 the gate was dropped with a log line.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator

from .helpers import FaultProxy, Omnigent, accept_and_run, proxied, until

pytestmark = pytest.mark.asyncio(loop_scope="module")


class CardProxy(FaultProxy):
    """In front of the real server: the hook for a request naming ``rm -rf`` gets ``status`` while
    ``poisoned`` holds; everything else goes through."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status
        self.poisoned = True
        self.hits = 0

    async def fault(self, request: httpx.Request) -> httpx.Response | None:
        hook = self.poisoned and request.method == "POST" and "/hooks/" in request.url.path
        if hook and b"rm -rf" in await request.aread():
            self.hits += 1
            return httpx.Response(self.status, json={"error": "injected"}, request=request)
        return None


def _errors(items: list[dict[str, Any]], code: str) -> list[str]:
    """The messages of the session's error items of ``code``."""
    return [str(i.get("message", "")) for i in items if i.get("code") == code]


async def test_a_card_omnigent_answers_only_with_5xx_is_told_once_and_still_tried(omni: Omnigent) -> None:
    proxy = CardProxy(503)
    async with proxied(omni, proxy) as p:
        sid = p.sid
        await p.session.send("run `rm -rf build`")

        async def told() -> bool:
            return bool(_errors(await omni.items(sid), "agy_card_unshown"))

        await until(told)  # past the bounded retry's deadline: one error item in the session
        hits = proxy.hits
        await until(lambda: _more(proxy, hits + 10))  # still tried, and not told again
        (text,) = _errors(await omni.items(sid), "agy_card_unshown")
        assert "rm -rf build" in text and "HTTP 503" in text and "agy's terminal" in text
        proxy.poisoned = False  # omnigent takes it now: the card shows, the answer goes through
        await accept_and_run(omni, sid, p.sim, "rm -rf build")
    assert p.sink.stats.unshown == 1


async def test_a_card_omnigent_refuses_with_a_4xx_is_told_and_agys_terminal_answers_it(
    omni: Omnigent,
) -> None:
    proxy = CardProxy(422)
    async with proxied(omni, proxy) as p:
        sid, sim = p.sid, p.sim
        await p.session.send("run `rm -rf build`")

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


async def _status(sim: Simulator) -> bool:
    return not sim.is_running(sim.cascade_id)
