"""The board in a real browser (Debian's chromium, driven by playwright) against the simulator:
list, open, answer a permission and a question, see cards retire (also when agy's terminal answers
first), send a turn, interrupt, and get notified (Apprise json://). Asserts what the person sees on the page.

``AGY_BOARD_SCREENSHOT=docs/board.png`` also writes the README's screenshot.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.engine import Engine
from agy_harness.composition.entrypoints.board.command import running_board
from agy_harness.composition.entrypoints.board.notify import Notifier
from tests.chromium import SHARED

from .helpers import answer_in_terminal, board_on, browser_page, receivers, require_chromium, until

pytestmark = SHARED  # the worker's chromium, on the session's loop

PERMISSION = "run: git status"
QUESTION = "ask: which part should we work on first?"
HELLO = "Say hello in one short sentence."


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


async def _rows(page: object) -> dict[str, str]:
    """{row title: state} as the page lists them."""
    items = await page.eval_on_selector_all(  # type: ignore[attr-defined]
        ".row", "rows => rows.map(r => [r.querySelector('.row-title').textContent, r.dataset.state])"
    )
    return dict(items)


async def test_list_open_answer_retire_notify(tmp_path: Path) -> None:
    async with Simulator(pace=0.02, gate_timeout=None) as sim, receivers("healthy") as (hook,):
        a, b, c = sim.cascade_id, await sim.start_cascade(), await sim.start_cascade()
        for cascade_id, text in ((a, PERMISSION), (b, QUESTION), (c, HELLO)):
            await sim.submit_user_turn(text, cascade_id=cascade_id)
        await sim.wait_idle(timeout=10)
        notifier = Notifier((f"json://127.0.0.1:{hook.port}/agy",), content=True)
        async with (
            running_board(agy_ports=[sim.port], notifier=notifier, tick=0.2) as board,
            browser_page(board.url) as page,
        ):
            # -- the list, by state, and the two cards agy waits on
            await page.wait_for_selector("#cards .card[data-kind=question]")
            await page.wait_for_selector("#cards .card[data-kind=permission]")
            await page.wait_for_function("document.querySelectorAll('.row').length === 3", polling=100)
            rows = await _rows(page)
            # agy's own title where it gives one (after a first turn), else the first prompt
            assert rows == {
                PERMISSION: "needs_you",
                QUESTION: "needs_you",
                "Say Hello In One Request": "idle",
            }
            groups = await page.eval_on_selector_all(
                ".group-title", "gs => gs.map(g => g.firstChild.textContent)"
            )
            assert groups == ["Needs you", "Idle"]
            assert (await page.title()).startswith("(2) agy asks")  # the tab names a request itself
            permission = page.locator("#cards .card[data-kind=permission]")
            assert (await permission.locator("pre.cmd").inner_text()).split("\n")[0] == "$ git status"
            # the browser was told (notification granted), once per gate
            notes = await page.evaluate("window.__notes")
            titles = sorted(n["title"] for n in notes)
            assert titles[0].startswith("agy asks to run `git status` in ")
            assert titles[1] == "agy asks: Which part should we work on first?"

            await page.screenshot(path=str(tmp_path / "board-home.png"))

            # -- allow the command in one click: the card retires, agy ran it, the row goes idle
            await permission.get_by_role("button", name="Allow once").click()
            await page.wait_for_selector("#cards .card[data-kind=permission]", state="detached")
            await until(lambda: not sim.is_running(a))
            run = next(s for s in sim.steps(a) if s.get("type", "").endswith("RUN_COMMAND"))
            assert run["status"].endswith("DONE")
            await page.wait_for_function(
                "[...document.querySelectorAll('.row')].every(r => r.dataset.state !== 'needs_you'"
                " || r.textContent.includes('which part'))",
                polling=100,
            )

            # -- open the question's session: live transcript, the card pinned, answer option 2
            await page.locator(".row", has_text="which part").click()
            await page.wait_for_selector("#stream .msg.user")
            assert await page.locator("#stream .msg.user").first.inner_text() == QUESTION
            pinned = page.locator("#s-cards .card[data-kind=question]")
            await pinned.wait_for()
            await pinned.get_by_text("Start with the tests.").click()
            await pinned.get_by_role("button", name="Answer").click()
            await page.wait_for_selector("#s-cards .card", state="detached")
            reply = page.locator("#stream .msg.assistant", has_text="tests")
            await reply.first.wait_for()
            await until(lambda: not sim.is_running(b))

            # -- a turn from the page, then an interrupt of a long one
            await page.locator("#turn").fill("run: ls -la")
            await page.keyboard.press("Control+Enter")
            await page.wait_for_selector("#s-cards .card[data-kind=permission]")
            assert "ls -la" in await page.locator("#s-cards pre.cmd").inner_text()
            shot = os.environ.get("AGY_BOARD_SCREENSHOT")  # the README's picture
            await page.screenshot(path=shot or str(tmp_path / "board-session.png"))
            # agy's own terminal answers first: the card retires without a click here
            await answer_in_terminal(sim, b)
            await page.wait_for_selector("#s-cards .card", state="detached")
            await until(lambda: not sim.is_running(b))
            sim.pace = 1.0  # the story streams for seconds, however busy the machine (room to interrupt)
            await page.locator("#turn").fill("Write a long story about a lighthouse keeper.")
            await page.get_by_role("button", name="Send").click()
            await page.wait_for_selector("#stream .msg.assistant.streaming")
            await page.get_by_role("button", name="Interrupt").click()
            await until(lambda: not sim.is_running(b), timeout=10)
            story = next(s for s in reversed(sim.steps(b)) if s.get("type", "").endswith("PLANNER_RESPONSE"))
            assert len(str(story)) < 20000  # cut short, not the whole story

            # -- notifications (Apprise, json://): the two gates waiting when the board started, the
            # new one, and the end of a turn seen running (none for the replayed history's turns)
            await until(lambda: any("ls -la" in p["body"] for p in hook.posts), timeout=60)
            await until(lambda: any("finished a turn" in p["body"] for p in hook.posts), timeout=60)
            said = [json.loads(p["body"]) for p in hook.posts]
            gates = [s["message"] for s in said if s["title"] == "agy needs you"]
            assert any("agy asks to run `git status`" in g for g in gates)
            assert any("agy asks: Which part should we work on first?" in g for g in gates)
            assert any("agy asks to run `ls -la`" in g for g in gates)
            assert all(board.token not in s["message"] for s in said)
            assert page.errors == []


async def test_the_terminal_answers_first_on_the_home_board() -> None:
    async with Simulator(pace=0.02, gate_timeout=None) as sim, board_on(sim, tick=0.2) as (_board, page):
        await page.wait_for_selector(".row")
        await sim.submit_user_turn("run: make test")  # typed in agy's terminal
        await page.wait_for_selector("#cards .card[data-kind=permission]")
        await answer_in_terminal(sim, sim.cascade_id)
        await page.wait_for_selector("#cards .card", state="detached")
        assert await page.locator("#calm").is_visible()
        assert page.errors == []


HOSTILE = "run: `echo <img src=x onerror=window.__pwned=1> \u202etxt.exe \x1b]52;c;aGk=\x07`"


async def test_agy_text_is_shown_as_text_never_as_html() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim, board_on(sim, tick=0.2) as (_board, page):
        await sim.submit_user_turn(HOSTILE)
        card = page.locator("#cards .card[data-kind=permission]")
        await card.wait_for()
        shown = await card.locator("pre.cmd").inner_text()
        # the markup is literal text, the bidi override and the escape sequence are made visible
        assert "<img src=x onerror=window.__pwned=1>" in shown
        assert "\\u202e" in shown and "\u202e" not in shown
        assert "\\x1b]52" in shown and "\x1b" not in shown
        await page.locator(".row").first.click()
        await page.wait_for_selector("#stream .msg.user")
        assert "<img" in await page.locator("#stream .msg.user").inner_text()
        assert await page.locator("img").count() == 0
        assert await page.evaluate("window.__pwned") is None
        assert page.errors == []


async def test_deny_and_tell_agy_why() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim, board_on(sim, tick=0.2) as (_board, page):
        await sim.submit_user_turn("run: rm -rf build")
        card = page.locator("#cards .card[data-kind=permission]")
        await card.wait_for()
        await card.get_by_label("why you deny (optional, agy is told)").fill("use make clean instead")
        await card.get_by_role("button", name="Deny").click()
        await card.wait_for(state="detached")
        await until(lambda: not sim.is_running())
        run = next(s for s in sim.steps() if s.get("type", "").endswith("RUN_COMMAND"))
        response = run["completedInteractions"][-1]["response"]["permission"]
        assert response == {"userDenyInstruction": "use make clean instead"}  # a denial, with why
        assert sim.executed == []
        await page.locator(".row").first.click()
        said = page.locator("#stream .msg.assistant", has_text="you said: use make clean instead")
        await said.first.wait_for()
        assert page.errors == []


#: what moves on the page: each running animation's element classes and pseudo-element
ANIMATING = """() => document.getAnimations().filter(a => a.playState === 'running')
  .map(a => `${a.effect.target.className}${a.effect.pseudoElement || ''}`).sort()"""


def hold_mid_reply(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """agy stops streaming its reply once some of it is out, until the returned event is set."""
    release = asyncio.Event()
    pause = Engine.pause

    async def held(self: Engine, seconds: float) -> None:
        if self.current is not None and self.current["plannerResponse"].get("modifiedResponse"):
            await release.wait()
        await pause(self, seconds)

    monkeypatch.setattr(Engine, "pause", held)
    return release


async def test_the_page_moves_only_while_agy_works_and_never_for_reduced_motion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing moves on a board where nothing works (a headless chromium draws every frame of an
    animation in software: ~0.3 CPU-s a second); while agy streams a reply its row pulses and the
    reply shows a blinking cursor; for a person who asked for reduced motion (the other board tests'
    pages) nothing moves. Fails before the fix: the header's "working 0" chip pulsed on every open
    board, and the streaming cursor blinked under reduced motion."""
    release = hold_mid_reply(monkeypatch)
    moving: dict[str, list[str]] = {}
    async with (
        Simulator(pace=0, gate_timeout=None) as sim,
        running_board(agy_ports=[sim.port], tick=0.1) as board,
    ):
        await sim.submit_user_turn(PERMISSION)  # parked on its gate: a card, nothing works
        await sim.wait_idle(timeout=10)
        async with browser_page(board.url, motion=True) as page:
            await page.locator("#cards .card").wait_for()
            moving["nothing works"] = await page.evaluate(ANIMATING)
        streaming = await sim.start_cascade()
        await sim.submit_user_turn(HELLO, cascade_id=streaming)
        for motion in (True, False):
            async with browser_page(board.url, motion=motion) as page:
                await page.locator(".row", has_text=HELLO).click()
                await page.locator("#stream .msg.assistant.streaming").wait_for()
                moving[f"streams, motion {motion}"] = await page.evaluate(ANIMATING)
                assert page.errors == []
        assert sim.is_running(streaming)  # (still streaming while both pages looked)
        release.set()
    assert moving == {
        "nothing works": [],
        # the header's "working 1" and the open conversation's state, and the reply's cursor
        "streams, motion True": ["chip st-working::before"] * 2 + ["msg assistant streaming::after"],
        "streams, motion False": [],
    }
