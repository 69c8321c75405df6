"""A flood of bogus gates on the board (issue #35, case 8): 20 WAITING approvals agy refuses any answer
to, then a real request. A human answering the board's first card, one at a time, over its HTTP API:
each bogus card is answered once, agy's refusal retires it (410, "set aside"), its conversation shows
one notice saying so, and the real card is answered and runs. Before the fix a set-aside card stayed
first on the board: the same bogus card was answered again and again, each answer sent to agy and
refused (80 answers of 80, the real one never ran).

The card of the turn a conversation runs (its newest user message's executionId) is listed before
the others: a flood already on the page when the real request comes never stacks above it (on
the page a human sees, in chromium: before, the real card was the 21st, below 20 bogus ones)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import flood_gates
from agy_harness.composition.entrypoints.board.command import running_board
from agy_harness.ports.events import GATE_SET_ASIDE
from tests.chromium import shared

from .helpers import board_on, require_chromium, until

POISON = 20
ROUNDS = 4 * POISON  # answers the human may give at most (the real one needs POISON + 1)


async def test_bogus_cards_are_answered_once_retired_and_the_real_one_runs() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn("say hello")
        await sim.wait_idle(timeout=10)
        async with running_board(agy_ports=[sim.port], tick=0.1) as board, httpx.AsyncClient() as client:
            base = board.url.split("/?")[0]
            headers = {"X-Board-Token": board.token, "Content-Type": "application/json"}

            async def cards() -> list[dict[str, Any]]:
                got = (await client.get(f"{base}/api/board", params={"token": board.token})).json()
                return list(got["cards"])

            flood_gates(sim, POISON)
            await sim.submit_user_turn("run `touch real`")
            answered: list[str] = []  # the gate ids answered, in order
            codes: Counter[int] = Counter()
            real_at: int | None = None  # bogus answers given before the real card was on the board
            real_id = ""
            async with asyncio.timeout(60):
                # until the real one ran and every bogus card is retired
                while len(answered) < ROUNDS:
                    shown = await cards()
                    if not shown and ("touch real", sim.workspace) in sim.executed:
                        break
                    if not shown:
                        await asyncio.sleep(0.05)
                        continue
                    real = [c for c in shown if "touch real" in c.get("command", "")]
                    if real_at is None and real:
                        real_at, real_id = len(answered), real[0]["gate_id"]
                    card = shown[0]  # the human answers the first card the board shows
                    answered.append(card["gate_id"])
                    body = {"gate_id": card["gate_id"], "shown": card["shown"], "answer": "allow"}
                    reply = await client.post(
                        f"{base}/api/s/{card['cascade_id']}/answer", json=body, headers=headers
                    )
                    codes[reply.status_code] += 1
                    async with asyncio.timeout(
                        10
                    ):  # the page drops the card (the board's JSON: a tick later)
                        while reply.status_code in (200, 410) and card["gate_id"] in [
                            c["gate_id"] for c in await cards()
                        ]:
                            await asyncio.sleep(0.05)
            live = board.board.live[sim.cascade_id]
            told = [
                v["text"] for v in live.history if "set aside" in str(v)
            ]  # every line of the page's history
            retired = [v["gate_id"] for v in live.history if v.get("reason") == GATE_SET_ASIDE]
    assert ("touch real", sim.workspace) in sim.executed, (len(answered), codes)
    sent = Counter(i.get("stepIndex") for _, i in sim.received)  # what reached agy, per step
    assert all(n == 1 for n in sent.values()), sent  # one answer per gate reached agy
    assert len(answered) == len(set(answered)) == POISON + 1, (
        codes,
        [a.split("/")[-2] for a in answered],
    )  # no card answered twice
    assert codes == Counter({410: POISON, 200: 1})  # each bogus one retired by agy's refusal
    assert real_at is not None and real_at <= POISON
    # once on the board, the real card is the first one: the next answer is the real one's
    assert answered.index(real_id) == real_at, (real_at, answered.index(real_id))
    ids = [t.rsplit("(gate ", 1)[1].removesuffix(")") for t in told]  # (the notice names its gate last)
    bogus = [a for a in answered if a != real_id]
    assert sorted(ids) == sorted(bogus)  # one "set aside" notice per bogus card, no repeat
    assert sorted(retired) == sorted(bogus)  # each bogus card retired once


@shared  # the worker's chromium, on the session's loop
async def test_on_the_page_a_flood_shown_before_the_turn_never_stacks_above_the_real_card() -> None:
    """In chromium, as a human sees it: 20 bogus approvals and 20 requests only agy's terminal can
    answer (``other``) are on the page when the human starts a turn whose request agy then waits on.
    The real card is the first card (in view, named by the tab's title) and one click on its Allow
    runs it; the flood's cards stay below. Before: the real card was the 41st, below the fold, and
    the human's first 20 clicks went to bogus cards."""
    require_chromium()
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn("say hello")
        async with board_on(sim) as (_board, page):
            flood_gates(sim, POISON)
            flood_gates(sim, POISON, kind="other")
            cards = page.locator("#cards .card")
            await cards.nth(2 * POISON - 1).wait_for()  # the flood is on the page
            await sim.submit_user_turn("run `touch real`")
            real = page.locator("#cards .card", has_text="$ touch real")
            await real.wait_for()
            first = cards.first
            assert "$ touch real" in await first.inner_text()
            box = await first.bounding_box()
            assert box is not None and box["y"] + box["height"] <= 860  # in view, no scrolling
            assert "touch real" in await page.title()
            await first.get_by_role("button", name="Allow once").click()
            await real.wait_for(state="detached")
            await until(lambda: ("touch real", sim.workspace) in sim.executed)
            assert await cards.count() == 2 * POISON  # the flood's cards are still there, below
    assert [command for command, _ in sim.executed] == ["touch real"]
