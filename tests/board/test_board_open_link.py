"""The link in "agy needs you" opens that card (issue 47): cold, in a browser that never saw the board,
once, while the card asks the same; never the board's standing token in a push. Before, the link was
the board's address without its token, and a cold open landed on the 403 page."""

from __future__ import annotations

import json

import httpx
import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.entrypoints.board.command import running_board
from agy_harness.composition.entrypoints.board.notify import Notifier
from agy_harness.composition.entrypoints.board.open_links import LinkRefused, OpenLinks
from tests.chromium import shared

from .helpers import answer_in_terminal, browser_page, receivers, until

pytest.importorskip("apprise")


def _link(post: dict[str, object]) -> str:
    return str(json.loads(str(post["body"]))["message"]).splitlines()[-1]


@shared  # the worker's chromium, on the session's loop
async def test_a_notifications_link_opens_its_card_once_and_carries_no_token() -> None:
    async with receivers("healthy") as (hook,), Simulator(pace=0, gate_timeout=None) as sim:
        notifier = Notifier((f"json://127.0.0.1:{hook.port}/agy",), ("gate",))
        other = await sim.start_cascade()
        await sim.submit_user_turn("run: `ls -la`", cascade_id=other)
        async with running_board(agy_ports=[sim.port], notifier=notifier, tick=0.1) as board:
            await hook.wait_for(1)
            await sim.submit_user_turn("run: `make test`")
            posts = await hook.wait_for(2)
            links = [_link(p) for p in posts]  # the first: `ls -la`'s card, the second: `make test`'s
            link = links[1]
            async with browser_page(
                link, own_context=True
            ) as page:  # cold: a browser context that never saw the board
                card = page.locator("#cards .card.named")
                await card.wait_for()
                assert await card.count() == 1 and "make test" in await card.locator("pre.cmd").inner_text()
                assert page.errors == []
            assert board.token not in link and "token" not in link  # never the standing token in a push
            assert link.startswith(f"http://127.0.0.1:{board.port}/open/")
            async with httpx.AsyncClient() as http:  # once: a second open grants nothing
                again = await http.get(link)
                assert again.status_code == 410 and "used already" in again.text
                assert "location" not in again.headers and board.token not in again.text
                # a link to a card no longer waiting (answered in agy's terminal) opens nothing
                await answer_in_terminal(sim, other)
                await until(lambda: len(board.board.snapshot()["cards"]) == 1)
                gone = await http.get(links[0])
                assert gone.status_code == 410 and "no longer waits" in gone.text
                assert board.token not in gone.text
                forged = await http.get(f"http://127.0.0.1:{board.port}/open/{'A' * 32}")
                assert forged.status_code == 410 and board.token not in forged.text


def test_a_link_is_short_lived_and_single_use() -> None:
    now = [0.0]
    opens = OpenLinks(ttl=60, clock=lambda: now[0])
    ticket = opens.mint("c", "g", "d" * 32)
    assert opens.redeem(ticket).digest == "d" * 32
    with pytest.raises(LinkRefused, match="used already"):
        opens.redeem(ticket)
    late = opens.mint("c", "g", "d" * 32)
    now[0] = 61.0
    with pytest.raises(LinkRefused, match="older than 1 minute"):
        opens.redeem(late)
