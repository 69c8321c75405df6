"""The board's cards as a person uses them, in Debian's chromium against the simulator: a card being
answered keeps what was picked and typed while other conversations move (issue 40, point 1)."""

from __future__ import annotations

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.entrypoints.board.command import running_board

from .helpers import browser_page, require_chromium, until

LONG = "Write a long story about a lighthouse keeper."


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


async def test_typing_on_home_cards_survives_another_conversation_streaming() -> None:
    async with Simulator(pace=0.02, gate_timeout=None) as sim:
        ask, deny, busy = sim.cascade_id, await sim.start_cascade(), await sim.start_cascade()
        await sim.submit_user_turn("ask multiple: which checks should run?", cascade_id=ask)
        await sim.submit_user_turn("run: rm -rf build", cascade_id=deny)
        await sim.wait_idle(timeout=10)
        async with (
            running_board(agy_ports=[sim.port], tick=0.1) as board,
            browser_page(board.url) as page,
        ):
            question = page.locator("#cards .card[data-kind=question]")
            permission = page.locator("#cards .card[data-kind=permission]")
            await question.wait_for()
            await permission.wait_for()
            # mark the two card nodes: a rebuilt card would be a new node without the mark
            await page.evaluate("document.querySelectorAll('#cards .card').forEach(n => n.__mine = 1)")
            sim.pace = 1.0  # another conversation streams, slowly, while the person types
            await sim.submit_user_turn(LONG, cascade_id=busy)
            await until(lambda: sim.is_running(busy))
            # the person types, key by key, while the board publishes update after update
            await question.get_by_text("Linting").click()
            await question.get_by_text("Unit tests").click()
            before = board.board.version
            await question.locator("input.write-in").press_sequentially("but keep the linters", delay=40)
            await permission.locator("input.deny-reason").press_sequentially("use make clean", delay=40)
            await until(lambda: board.board.version >= before + 3, timeout=30)
            assert sim.is_running(busy)  # the other conversation still streams
            assert await page.evaluate("[...document.querySelectorAll('#cards .card')].every(n => n.__mine)")
            assert await question.locator("input.write-in").input_value() == "but keep the linters"
            assert await permission.locator("input.deny-reason").input_value() == "use make clean"
            picked = question.locator("input[type=checkbox]:checked")
            assert await picked.evaluate_all("ns => ns.map(n => n.value)") == ["1", "3"]

            await question.get_by_role("button", name="Answer").click()
            await question.wait_for(state="detached", timeout=15000)
            await permission.get_by_role("button", name="Deny").click()
            await permission.wait_for(state="detached", timeout=15000)
            await until(lambda: not sim.is_running(ask) and not sim.is_running(deny), timeout=15)
            asked = next(s for s in sim.steps(ask) if s.get("type", "").endswith("ASK_QUESTION"))
            response = asked["completedInteractions"][-1]["response"]["askQuestion"]["responses"][0]
            assert response["selectedOptionIds"] == ["1", "3"]
            assert response["writeInResponse"] == "but keep the linters"  # exactly what was typed
            run = next(s for s in sim.steps(deny) if s.get("type", "").endswith("RUN_COMMAND"))
            denial = run["completedInteractions"][-1]["response"]["permission"]
            assert denial == {"userDenyInstruction": "use make clean"}  # exactly what was typed
            assert sim.executed == []
            assert page.errors == []
