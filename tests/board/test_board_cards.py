"""The board's cards as a person uses them, in Debian's chromium against the simulator: a card being
answered keeps what was picked and typed while other conversations move (issue 40, point 1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.entrypoints.board.command import running_board
from agy_harness.core.display import request_hash
from tests.chromium import SHARED

from .helpers import (
    answer_in_terminal,
    board_on,
    browser_page,
    cards_of,
    hold_withdrawals,
    require_chromium,
    until,
    waiting_step,
)

pytestmark = SHARED  # the worker's chromium, on the session's loop

LONG = "Write a long story about a lighthouse keeper."
SHORT_HASH = re.compile(r"#[0-9a-f]{8}(?![0-9a-f])")  # a card's short hash (a hidden part's has 16 hex)


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


async def test_typing_on_home_cards_survives_another_conversation_streaming() -> None:
    async with Simulator(pace=0.02, gate_timeout=None) as sim:
        ask, deny, busy = sim.cascade_id, await sim.start_cascade(), await sim.start_cascade()
        await sim.submit_user_turn("ask multiple: which checks should run?", cascade_id=ask)
        await sim.submit_user_turn("run: rm -rf build", cascade_id=deny)
        async with board_on(sim) as (board, page):
            question, permission = await cards_of(page, "question", "permission")
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


async def test_a_conversation_taller_than_the_pane_scrolls_and_tool_cards_show_whole() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        for _ in range(4):
            await sim.submit_user_turn("list the directory and view README.md and autorun: make test")
            await sim.wait_idle(timeout=10)
        async with board_on(sim, height=520) as (_board, page):
            await page.locator(".row").first.click()
            await page.wait_for_function(
                "() => document.querySelectorAll('#stream .tool .tool-out').length >= 12",
                polling=100,
            )
            stream = page.locator("#stream")
            sizes = await stream.evaluate("s => ({scroll: s.scrollHeight, client: s.clientHeight})")
            assert sizes["scroll"] > 2 * sizes["client"]  # taller than the pane: it scrolls
            # every tool card is as tall as its content (nothing crushed or clipped away)
            crushed = await page.eval_on_selector_all(
                "#stream .tool",
                "ts => ts.filter(t => t.getBoundingClientRect().height + 1 < t.scrollHeight"
                " || t.getBoundingClientRect().height + 1 < [...t.children].reduce("
                "(h, c) => h + c.getBoundingClientRect().height, 0)).length",
            )
            assert crushed == 0
            # scrolled to, a tool card is seen whole: its command line and its output inside the pane
            await stream.evaluate("s => { s.scrollTop = 0; }")
            tool = page.locator("#stream .tool", has=page.locator("pre.cmd")).nth(1)
            await tool.scroll_into_view_if_needed()
            inside = await tool.evaluate(
                "t => { const a = t.getBoundingClientRect(), b = document.getElementById('stream')"
                ".getBoundingClientRect(); return a.top >= b.top - 1 && a.bottom <= b.bottom + 1 && a.height > 60; }"
            )
            assert inside
            assert await page.evaluate("document.getElementById('stream').scrollTop") > 0
            assert "make test" in await tool.locator("pre.cmd").inner_text()
            assert await tool.locator(".tool-out").is_visible()
            assert page.errors == []


async def test_the_page_says_what_happened_and_what_to_do() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        ask, run = sim.cascade_id, await sim.start_cascade()
        await sim.submit_user_turn("ask: which part should we work on first?", cascade_id=ask)
        await sim.submit_user_turn("run: rm -rf build", cascade_id=run)
        async with board_on(sim) as (board, page):
            question, permission = await cards_of(page, "question", "permission")
            # an answer agy could not read: what to do, in words; nothing sent
            await question.get_by_text("Start with the tests.").click()
            await question.locator("input.write-in").fill("the docs")
            await question.get_by_role("button", name="Answer").click()
            msg = question.locator(".form-msg")
            await page.wait_for_function(
                "() => document.querySelector('#cards .card[data-kind=question] .form-msg').textContent",
                polling=100,
            )
            assert await msg.inner_text() == (
                "not sent: “Which part should we work on first?” takes one answer: "
                "pick an option or write your own, not both"
            )
            assert sim.is_running(ask) or waiting_step(sim, ask)[2]["status"].endswith("WAITING")
            # agy's terminal answers first while the page still shows the card: a lost race, in words
            _, release = hold_withdrawals(board)
            await answer_in_terminal(sim, run, allow=False)
            await permission.get_by_role("button", name="Allow once").click()
            said = permission.locator(".form-msg")
            await page.wait_for_function(
                "() => document.querySelector('#cards .card[data-kind=permission] .form-msg').textContent",
                polling=100,
            )
            assert (await said.inner_text()).startswith("answered elsewhere (in agy's terminal, on ACP")
            assert sim.executed == []
            release()
            await permission.wait_for(state="detached")
            # (chromium logs each refused POST; no script error)
            assert sorted(page.errors) == [
                f"Failed to load resource: the server responded with a status of {n} ()" for n in (400, 410)
            ]


async def test_a_cut_command_expands_to_the_whole_text_and_two_look_alikes_differ_by_hash() -> None:
    middle = "x" * 300
    commands = [f"echo {'a' * 300} {middle}{tail} {'b' * 300}" for tail in ("1", "2")]
    async with Simulator(pace=0, gate_timeout=None) as sim:
        first, second = sim.cascade_id, await sim.start_cascade()
        for cascade_id, command in zip((first, second), commands, strict=True):
            await sim.submit_user_turn(f"run: `{command}`", cascade_id=cascade_id)
        async with board_on(sim) as (_board, page):
            await page.wait_for_function(
                "() => document.querySelectorAll('#cards .card').length === 2", polling=100
            )
            cards = page.locator("#cards .card[data-kind=permission]")
            shown = [await cards.nth(i).locator("pre.cmd").inner_text() for i in range(2)]
            assert all("chars not shown" in text for text in shown)
            # cut, the two read the same where a person reads them...
            assert shown[0].split("⋯")[0] == shown[1].split("⋯")[0] == f"$ {commands[0][:300]} "
            hashes = [SHORT_HASH.findall(await cards.nth(i).inner_text()) for i in range(2)]
            assert hashes == [[request_hash(command)] for command in commands]  # one each, and they differ
            # ...and one click shows the whole command, exactly
            for i in range(2):
                card = cards.nth(i)
                await card.locator("pre.cmd").click()
                whole = (await card.locator("pre.cmd").inner_text()).removeprefix("$ ")
                assert whole.split("\n")[0] in commands  # (the rule may add its notes below)
                assert await card.locator("button.expand").get_attribute("aria-expanded") == "true"
            picked = cards.filter(has_text=commands[1])
            assert await picked.count() == 1
            await picked.get_by_role("button", name="Allow once").click()
            await until(lambda: bool(sim.executed))
            assert [command for command, _ in sim.executed] == [commands[1]]  # what was read is what ran
            assert page.errors == []


async def test_titles_and_notifications_name_the_request_and_agys_own_title() -> None:
    home = str(Path.home())
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn("run: `ls -la /srv/data` in /var/tmp")  # the first prompt
        await until(lambda: any(s.get("status", "").endswith("WAITING") for s in sim.steps()))
        await answer_in_terminal(sim, sim.cascade_id)
        async with board_on(sim) as (_board, page):  # once the first turn ended: agy titled it
            await page.wait_for_selector(".row")
            await sim.submit_user_turn(f"run: `rm -rf build` in {home}/proj")
            card = page.locator("#cards .card[data-kind=permission]")
            await card.wait_for()
            ask = "agy asks to run `rm -rf build` in ~/proj"
            await page.wait_for_function("() => (window.__notes || []).length > 0", polling=100)
            notes = await page.evaluate("window.__notes")
            assert notes == [{"title": ask, "body": "in “Run Ls La Srv Request”"}]
            assert await page.title() == f"(1) {ask}"
            assert await card.locator(".card-from").inner_text() == "Run Ls La Srv Request"
            assert await page.locator(".row .row-title").inner_text() == "Run Ls La Srv Request"
            assert "ls -la" not in str(notes) + await page.title()  # the first prompt misleads no one
            assert page.errors == []


async def test_one_allow_button_per_offered_scope_each_reaching_agy_with_that_scope() -> None:
    from agy_harness.core.scopes import PERMISSION_SCOPE

    async with Simulator(pace=0, gate_timeout=None) as sim:
        ids = [sim.cascade_id, await sim.start_cascade(), await sim.start_cascade()]
        for cascade_id, command in zip(ids, ("ls -la", "git status", "make test"), strict=True):
            await sim.submit_user_turn(f"run: `{command}`", cascade_id=cascade_id)
        async with board_on(sim) as (board, page):
            await page.wait_for_function(
                "() => document.querySelectorAll('#cards .card').length === 3", polling=100
            )
            for cascade_id, command, scope in zip(
                ids, ("ls -la", "git status", "make test"), ("once", "conversation", "global"), strict=True
            ):
                card = page.locator("#cards .card", has_text=command)
                gate = next(g for g, _ in board.board.live[cascade_id].gates.values())
                assert gate.scopes == ("once", "conversation", "global")  # what agy offers here
                labels = await card.locator("button[data-act=allow]").evaluate_all(
                    "bs => bs.map(b => [b.dataset.scope, b.textContent])"
                )
                word = command.split()[0]
                assert labels == [
                    ["once", "Allow once"],
                    ["conversation", f"Allow for this conversation: commands that start with '{word}'"],
                    ["global", f"Always allow: commands that start with '{word}'"],
                ]
                await card.locator(f"button[data-scope={scope}]").click()
                await card.wait_for(state="detached")
                await until(lambda c=cascade_id: any(r[0] == c for r in sim.received))
                [sent] = [r for c, r in sim.received if c == cascade_id]
                expected: dict[str, object] = {"allow": True}
                if scope != "once":
                    expected["scope"] = PERMISSION_SCOPE[scope]
                assert sent["permission"] == expected
            assert page.errors == []


async def test_an_edited_command_is_what_the_card_shows_and_what_runs() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        other = await sim.start_cascade()
        await sim.submit_user_turn("kind: runCommand rm -rf build")  # agy lets this one be edited
        await sim.submit_user_turn("run: `ls -la`", cascade_id=other)  # and not this one
        async with board_on(sim) as (_board, page):
            card = page.locator("#cards .card", has_text="rm -rf build")
            await card.wait_for()
            plain = page.locator("#cards .card", has_text="ls -la")
            await plain.wait_for()
            assert await plain.locator("button[data-act=edit]").count() == 0  # not editable: no control
            assert await card.locator("button[data-act=allow]").count() == 1  # runCommand: once only
            await card.get_by_role("button", name="Edit command").click()
            box = card.get_by_label("the command to run (edited)")
            assert await box.input_value() == "rm -rf build"
            await box.fill("rm -rf build/tmp\u202e")
            assert await card.locator("pre.cmd").inner_text() == "$ rm -rf build/tmp\\u202e"  # shown visibly
            await box.fill("rm -rf build/tmp")
            assert await card.locator("pre.cmd").inner_text() == "$ rm -rf build/tmp"
            await card.get_by_role("button", name="Allow once").click()
            await card.wait_for(state="detached")
            await until(lambda: bool(sim.executed))
            assert sim.executed == [("rm -rf build/tmp", sim.workspace)]  # the edited text ran
            assert sim.received[-1][1]["runCommand"]["submittedCommandLine"] == "rm -rf build/tmp"
            assert page.errors == []


async def test_a_notification_link_names_its_card() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        other = await sim.start_cascade()
        await sim.submit_user_turn("run: `ls -la`")
        await sim.submit_user_turn("run: `make test`", cascade_id=other)
        await sim.wait_idle(timeout=10)
        async with running_board(agy_ports=[sim.port], tick=0.1) as board:
            await until(lambda: len(board.board.snapshot()["cards"]) == 2)
            named = next(c for c in board.board.snapshot()["cards"] if "make test" in c["command"])
            async with browser_page(f"{board.url}#card-{named['anchor']}") as page:
                card = page.locator("#cards .card.named")
                await card.wait_for()
                assert await card.count() == 1 and "make test" in await card.locator("pre.cmd").inner_text()
                assert SHORT_HASH.findall(await card.inner_text()) == [request_hash("make test")]
                assert page.errors == []


async def test_a_card_shows_one_hash_and_flags_a_look_alike_directory() -> None:
    """One short hash per card, the display rule's (``request_hash`` of the command, as every surface
    shows it; the gate digest is not shown); a working directory with a Cyrillic "і" (U+0456) is
    flagged under the card's "in ..." line, naming the code point; the ASCII one is not."""
    dirs = ["/tmp/wiki", "/tmp/w\u0456ki"]
    async with Simulator(pace=0, gate_timeout=None) as sim:
        cascades = [sim.cascade_id, await sim.start_cascade()]
        for cascade_id, cwd in zip(cascades, dirs, strict=True):
            await sim.submit_user_turn(f"run: `ls -la` in {cwd}", cascade_id=cascade_id)
        async with board_on(sim) as (_board, page):
            await page.wait_for_function(
                "() => document.querySelectorAll('#cards .card').length === 2", polling=100
            )
            cards = page.locator("#cards .card[data-kind=permission]")
            texts = {}
            for i in range(2):
                card = cards.nth(i)
                text = await card.inner_text()
                assert SHORT_HASH.findall(text) == [request_hash("ls -la")]  # exactly one hash
                texts[await card.locator(".cwd").inner_text()] = (
                    text,
                    await card.locator(".cwd-note").all_inner_texts(),
                )
            assert sorted(texts) == [f"in {d}" for d in sorted(dirs)]
            plain, plain_notes = texts[f"in {dirs[0]}"]
            odd, odd_notes = texts[f"in {dirs[1]}"]
            assert plain_notes == [] and plain != odd
            assert len(odd_notes) >= 1 and any("U+0456" in note for note in odd_notes)
            assert page.errors == []


async def test_a_deny_reason_is_offered_only_where_agy_takes_one() -> None:
    """agy's runCommand answer carries no reason (core/answers.py): its card offers no "why? (agy is
    told)" box, and Deny reaches agy as a plain denial. On main the box was there; a reason typed in it
    was refused with "reload the page and answer again", and the deny was never sent."""
    async with Simulator(pace=0, gate_timeout=None) as sim:
        other = await sim.start_cascade()
        await sim.submit_user_turn("kind: runCommand rm -rf build")
        await sim.submit_user_turn("run: `ls -la`", cascade_id=other)
        await sim.wait_idle(timeout=10)
        async with (
            running_board(agy_ports=[sim.port], tick=0.1) as board,
            browser_page(board.url) as page,
        ):
            card = page.locator("#cards .card", has_text="rm -rf build")
            await card.wait_for()
            plain = page.locator("#cards .card", has_text="ls -la")
            await plain.wait_for()
            assert await plain.locator("input.deny-reason").count() == 1  # a permission takes a reason
            assert await card.locator("input.deny-reason").count() == 0  # runCommand takes none
            await card.get_by_role("button", name="Deny").click()
            await card.wait_for(state="detached")
            await until(lambda: any("runCommand" in r for _, r in sim.received))
            [sent] = [r["runCommand"] for _, r in sim.received if "runCommand" in r]
            assert sent.get("confirm") is not True and not sim.executed
            assert page.errors == []


async def test_a_request_cut_past_4_mib_offers_no_allow() -> None:
    """A command over the 4 MiB string cut cannot be shown whole, so the core refuses any allow of it
    (core/answers.py ``_whole``): its card offers Deny only. On main it offered "Allow once", which
    was refused when clicked ("reload the page and answer again"): a button the code does not keep."""
    from agy_harness.adapters.rpc.bounded import MAX_STRING

    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn(f"run `echo {'x' * (MAX_STRING + 1000)}; ls`")
        await sim.wait_idle(timeout=60)
        async with (
            running_board(agy_ports=[sim.port], tick=0.1) as board,
            browser_page(board.url) as page,
        ):
            card = page.locator("#cards .card", has_text="can be denied, not allowed")
            await card.wait_for(timeout=120_000)
            assert await card.locator("button[data-act=allow]").count() == 0
            await card.get_by_role("button", name="Deny").click()
            await card.wait_for(state="detached", timeout=120_000)
            await until(lambda: bool(sim.received))
            assert [r["permission"] for _, r in sim.received] == [{"allow": False}] and not sim.executed
            assert page.errors == []


async def test_a_question_flags_its_look_alike_text_and_options() -> None:
    """A question's text and options carry their look-alike flags (core.display.label_notes), as a
    command's do: the options ``github.com`` and ``gіthub.com`` (Cyrillic U+0456) rendered the same
    before; now the look-alike one is named with its code point and the ASCII one has no note."""
    from agy_harness.adapters.simulator.hostile import rewrite_question

    options = [{"id": "1", "text": "github.com"}, {"id": "2", "text": "g\u0456thub.com"}]
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn("ask: clone from g\u0456thub.com?")
        _, index, _ = await _waiting(sim)
        rewrite_question(sim, index, options)
        async with board_on(sim) as (_board, page):
            (question,) = await cards_of(page, "question")
            await page.wait_for_function(
                "() => document.querySelectorAll('#cards .card[data-kind=question] label').length === 2",
                polling=100,
            )
            labels = question.locator("label")
            plain, odd = await labels.nth(0).inner_text(), await labels.nth(1).inner_text()
            assert "⚠" not in plain and "U+0456" in odd and "mixed scripts" in odd
            notes = await question.locator(".cwd-note").all_inner_texts()
            assert any("U+0456" in n for n in notes)  # the question's own text, flagged under it
            assert page.errors == []


async def _waiting(sim: Simulator) -> tuple[str, int, dict[str, Any]]:
    await until(lambda: any(s["status"].endswith("WAITING") for s in sim.steps()), timeout=30)
    return waiting_step(sim, sim.cascade_id)
