"""A request too large for its card (a command near agy's 4 MiB string cut): the board's snapshots carry
a bounded preview, its size and SHA-256; the page fetches the whole text (by the gate id and the card's
digest, behind the token) and offers an allow only once it shows it all; an allow runs exactly it.

Before: such a card carried the whole text twice (``full`` and ``edit_from``, 8.4 MB) in EVERY board
snapshot and update, and its Allow was usable on the cut preview. Over HTTP and in Debian's chromium,
against the simulator."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
from typing import Any

import httpx
import pytest

from agy_harness.adapters.rpc.bounded import MAX_STRING
from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.hostile import rewrite_waiting
from agy_harness.composition.entrypoints.board.cards import COMMAND_LINES
from agy_harness.composition.entrypoints.board.command import running_board
from agy_harness.core.display import command_view
from tests.chromium import shared

from .helpers import browser_page, require_chromium, until, waiting_step

#: one line near the string cut, with characters the rendering rule escapes and non-ASCII ones (the
#: page's SHA-256 of the text it shows must be the card's: UTF-8 on both sides)
COMMAND = "echo é漢 \u202e " + "x" * (MAX_STRING - (64 << 10)) + " done; ls"
HUGE = f"kind: runCommand {COMMAND}"  # agy's runCommand: an editable command
BOUND = 256 << 10  # what a snapshot with such a card open is at most (it was 8.4 MB)


def _whole(command: str) -> str:
    return "\n".join(command_view(command, sys.maxsize, sys.maxsize).lines)


def _preview(command: str) -> str:
    return "\n".join(command_view(command, COMMAND_LINES).lines)


async def _huge_card(client: httpx.AsyncClient, base: str, token: str) -> dict[str, Any]:
    """The board's first card, once shown; every snapshot read on the way is bounded."""
    async with asyncio.timeout(120):
        while True:
            r = await client.get(f"{base}/api/board", params={"token": token})
            assert len(r.content) < BOUND, f"a snapshot with the card open is {len(r.content)} bytes"
            if r.json().get("cards"):
                return dict(r.json()["cards"][0])
            await asyncio.sleep(0.05)


async def test_snapshots_carry_a_preview_and_the_whole_text_is_fetched_by_gate_and_digest() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn(HUGE)
        await sim.wait_idle(timeout=120)
        async with (
            running_board(agy_ports=[sim.port], tick=0.1) as board,
            httpx.AsyncClient(timeout=120) as client,
        ):
            base, token = board.url.split("/?")[0], board.token
            card = await _huge_card(client, base, token)
            whole = _whole(COMMAND)
            # the preview is the rendering rule's cut view; the whole text is named by size and digest
            assert card["command"] == _preview(COMMAND)
            assert "full" not in card and "edit_from" not in card
            assert card["whole"] == {
                "chars": len(whole),
                "lines": whole.count("\n") + 1,
                "sha256": hashlib.sha256(whole.encode()).hexdigest(),
            }
            assert card["no_edit"].startswith("too large to edit on the board")
            cascade = card["cascade_id"]
            fetch = f"{base}/api/s/{cascade}/whole"
            ids = {"gate": card["gate_id"], "shown": card["shown"]}

            # the fetch: behind the token, for exactly this gate and card, the whole text
            assert (await client.get(fetch, params=ids)).status_code == 403
            assert (await client.get(fetch, params={**ids, "token": "x" + token})).status_code == 403
            stale = await client.get(fetch, params={**ids, "shown": "0" * 32, "token": token})
            assert stale.status_code == 410 and "no longer what agy asks" in stale.json()["error"]
            gone = await client.get(fetch, params={**ids, "gate": "no/such/gate", "token": token})
            assert gone.status_code == 410
            got = await client.get(fetch, params={**ids, "token": token})
            assert got.status_code == 200 and got.headers["cache-control"] == "no-store"
            data = got.json()
            assert data["full"] == whole and len(data["ticket"]) == 32

            # the conversation's own stream carries the card as bounded as the snapshot (the prompt and
            # the tool call, agy's own steps, are the conversation: shown as they are)
            async with client.stream("GET", f"{base}/api/s/{cascade}/events", params={"token": token}) as s:
                sizes = {}
                async for line in s.aiter_lines():
                    if line.startswith("data: "):
                        event = json.loads(line[6:])
                        sizes[event["type"]] = max(sizes.get(event["type"], 0), len(line))
                    if '"caught_up"' in line:
                        break
            assert 0 < sizes["gate_opened"] < BOUND, sizes

            # an allow carries the ticket only the fetch gives: without it (or a wrong one), 400, nothing sent
            answer = f"{base}/api/s/{cascade}/answer"
            headers = {"X-Board-Token": token, "Content-Type": "application/json"}
            body = {"gate_id": card["gate_id"], "shown": card["shown"], "answer": "allow"}
            for extra in ({}, {"ticket": "0" * 32}, {"ticket": "é"}):
                r = await client.post(answer, json={**body, **extra}, headers=headers)
                assert r.status_code == 400 and "load the whole command" in r.json()["error"], r.text
            assert sim.received == [] and sim.executed == []
            assert waiting_step(sim, sim.cascade_id)[2]["status"].endswith("WAITING")
            ok = await client.post(answer, json={**body, "ticket": data["ticket"]}, headers=headers)
            assert ok.status_code == 200, ok.text
            await until(lambda: bool(sim.executed), timeout=60)
            assert [command for command, _ in sim.executed] == [COMMAND]  # exactly what was fetched
            # the gate closed: its text is no longer given
            live = next(iter(board.board.live.values()))
            await until(lambda: card["gate_id"] not in live.gates, timeout=60)
            closed = await client.get(fetch, params={**ids, "token": token})
            assert closed.status_code == 410, closed.text


async def test_a_changed_request_is_no_longer_fetched_and_a_small_card_stays_inline() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        small = await sim.start_cascade()
        tall = "\n".join(f"echo {i}" for i in range(60))  # cut on its card, far below the threshold
        await sim.submit_user_turn(f"run `{tall}`", cascade_id=small)
        await sim.submit_user_turn(f"run `{COMMAND}`")
        await sim.wait_idle(timeout=120)
        async with (
            running_board(agy_ports=[sim.port], tick=0.1) as board,
            httpx.AsyncClient(timeout=120) as client,
        ):
            base, token = board.url.split("/?")[0], board.token
            await _huge_card(client, base, token)
            await until(lambda: sum(len(lv.gates) for lv in board.board.live.values()) == 2, timeout=60)
            cards = (await client.get(f"{base}/api/board", params={"token": token})).json()["cards"]
            inline = next(c for c in cards if c["cascade_id"] == small)
            huge = next(c for c in cards if c["cascade_id"] != small)
            # a small card exactly as before: its whole text inline, nothing to fetch
            assert inline["full"] == _whole(tall) and "whole" not in inline and len(inline["full"]) < 64 << 10
            r = await client.get(
                f"{base}/api/s/{small}/whole",
                params={"gate": inline["gate_id"], "shown": inline["shown"], "token": token},
            )
            assert r.status_code == 404
            # agy now asks something else at the huge card's step: its text is no longer given (410)
            ids = {"gate": huge["gate_id"], "shown": huge["shown"], "token": token}
            fetch = f"{base}/api/s/{huge['cascade_id']}/whole"
            assert (await client.get(fetch, params=ids)).status_code == 200
            _, index, _ = waiting_step(sim, huge["cascade_id"])
            rewrite_waiting(sim, index, "ls -la", cascade_id=huge["cascade_id"])
            live = board.board.live[huge["cascade_id"]]
            await until(lambda: huge["gate_id"] not in live.gates, timeout=60)
            changed = await client.get(fetch, params=ids)
            assert changed.status_code == 410, changed.text


#: the whole text's box: its containment (chromium computes ``strict`` as its four parts), whether it
#: scrolls, and, scrolled to its end, whether the text's last characters are drawn inside it
CONTAINED = """n => {
  const contain = getComputedStyle(n).contain;
  const scrolls = n.scrollHeight > n.clientHeight;
  n.scrollTop = n.scrollHeight;
  const text = n.firstChild, range = document.createRange();
  range.setStart(text, text.length - 8); range.setEnd(text, text.length);
  const box = n.getBoundingClientRect(), end = range.getBoundingClientRect();
  n.scrollTop = 0;
  return {
    contain: (contain === "strict" ? "size layout paint style" : contain).split(" ").sort(),
    scrolls, end: range.toString(),
    end_shown: end.height > 0 && end.top >= box.top && end.bottom <= box.bottom && end.left >= box.left && end.right <= box.right,
  };
}"""


@pytest.fixture
def _chromium() -> None:
    require_chromium()


@shared  # the worker's chromium, on the session's loop
@pytest.mark.usefixtures("_chromium")
async def test_allow_is_usable_only_once_the_whole_text_is_on_the_page_and_runs_exactly_it() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn(HUGE)
        await sim.wait_idle(timeout=120)
        async with running_board(agy_ports=[sim.port], tick=0.1) as board, browser_page(board.url) as page:
            card = page.locator("#cards .card[data-kind=permission]")
            await card.wait_for(timeout=120_000)
            shown = card.locator("pre.cmd")
            assert await shown.evaluate("n => n.textContent") == "$ " + _preview(COMMAND)  # the preview
            allow = card.get_by_role("button", name="Allow once")
            assert await allow.is_disabled()  # (on the code before: usable on the preview)
            assert "too large for the card" in await card.locator(".whole-note").inner_text()
            await page.keyboard.press("a")  # the keyboard's allow of the first card: nothing is sent
            assert not await card.evaluate("n => n.classList.contains('sent')")
            assert not await card.get_by_role("button", name="Deny").is_disabled()  # (a send disables all)
            assert await card.locator("[data-act=edit]").count() == 0
            assert "too large to edit" in await card.inner_text()

            await card.get_by_role("button", name=re.compile("^load the whole command")).click()
            await page.wait_for_function(
                "() => !document.querySelector('#cards .card button[data-act=allow]').disabled",
                timeout=120_000,
                polling=100,
            )
            # the whole text, exactly as the rendering rule shows it, is on the page
            assert await shown.evaluate("n => n.textContent") == "$ " + _whole(COMMAND)
            # in a box of its own size (its layout never redone for a change around it; before: its
            # size followed its 4 MiB of text, laid out again each time the card grid sized it), and
            # all of it readable there: scrolled to its end, the text's end is inside the box
            contained = await shown.evaluate(CONTAINED)
            assert contained["contain"] == ["layout", "paint", "size", "style"], contained
            assert (
                contained["scrolls"] and contained["end_shown"] and contained["end"] == _whole(COMMAND)[-8:]
            ), contained
            assert "whole command is shown above" in await card.locator(".whole-note").inner_text()
            assert sim.received == []

            await allow.click()
            await card.wait_for(state="detached", timeout=120_000)
            await until(lambda: bool(sim.executed), timeout=60)
            assert [command for command, _ in sim.executed] == [COMMAND]  # exactly what was shown
            assert page.errors == []
