"""The terminal (``attach``'s and ``demo``'s sink) answers every kind issue 45 made answerable through
its one y / n prompt, with the card in words and each kind's own labels, and what agy receives read
from the simulator: the allow and the deny in the descriptor's shape, a deploy's deny its cancel,
and agy's refusal of an answer on the screen, once, sending the human to agy's terminal."""

from __future__ import annotations

import asyncio
import io
import os
from typing import Any

import pytest
from rich.console import Console

from agy_harness.adapters.simulator import Simulator
from agy_harness.adapters.simulator.interactions import proceeds
from agy_harness.adapters.simulator.kind_steps import FIELD_OF
from agy_harness.adapters.sinks.terminal import TerminalSink
from agy_harness.composition.root.session import open_session
from tests.binding.helpers import FAST
from tests.gates.test_kind_answers import CASES


def screen() -> Console:
    return Console(record=True, width=200, color_system=None, force_terminal=False, file=io.StringIO())


async def answered(sim: Simulator, turn: str, typed: str) -> tuple[str, dict[str, Any]]:
    """``turn`` asks one gate; the human types ``typed`` at its prompt. The screen, and what agy got."""
    console = screen()
    sink = TerminalSink(console, input_fn=lambda _prompt: typed, status_line=False)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        await s.send(turn)
        async with asyncio.timeout(30):
            while not sim.received:
                await asyncio.sleep(0.05)
        await sim.wait_idle(timeout=30)
    _cascade, interaction = sim.received[-1]
    return console.export_text(clear=False), {
        k: v for k, v in interaction.items() if k not in ("trajectoryId", "stepIndex")
    }


@pytest.mark.parametrize(
    ("turn", "typed", "card", "choices", "got"),
    [
        ("kind: openBrowserUrl https://example.com/t", "y", "agy asks to open https://example.com/t in a browser",
         "y allow · n deny", {"openBrowserUrl": {"confirm": True}}),
        ("kind: mcp create_issue", "n", "agy asks to use the MCP tool github/create_issue",
         "y allow · n deny", {"mcp": {"confirm": False}}),
        ("kind: deploy my-site", "y", 'agy asks to deploy {"name": "my-site"}', "y deploy · n cancel the deploy",
         {"deploy": {"cancel": False, "deployTarget": {"name": "my-site"}}}),
        ("kind: deploy my-site", "n", 'agy asks to deploy {"name": "my-site"}', "y deploy · n cancel the deploy",
         {"deploy": {"cancel": True}}),
        ("kind: sendCommandInput q", "y", "agy asks to send input to a running command: q", "y allow · n deny",
         {"sendCommandInput": {"confirm": True}}),
        ("kind: plainElicitation Go on?", "n", "the MCP server github asks through agy: Go on?",
         "y accept · n decline", {"elicitation": {"action": "decline"}}),
        ("kind: elicitation Which account?", 'accept: {"account": "me"}', "(it asks for: account (string, required))",
         "n decline (it cannot be allowed from here", {"elicitation": {"action": "accept", "contentJson": '{"account":"me"}'}}),
    ],
)  # fmt: skip
async def test_each_kind_is_answered_at_the_terminal_prompt(
    sim: Simulator, turn: str, typed: str, card: str, choices: str, got: dict[str, Any]
) -> None:
    out, message = await answered(sim, turn, typed)
    assert message == got
    assert card in out and choices in out
    [title] = [line for line in out.splitlines() if "⏸" in line]
    asked = out[out.index(title) :]  # the card and what follows it (the turn itself names the kind)
    assert "⏸ agy asks to " in title
    for raw in ("openBrowserUrl", "sendCommandInput", "(mcp)", "(deploy)", "(elicitation)"):
        assert raw not in asked  # the kind in words, never agy's field name


async def test_agys_refusal_is_said_once_and_sends_the_human_to_agys_terminal(sim: Simulator) -> None:
    sim.faults.refuse_kinds = {"readUrlContent"}
    console = screen()
    sink = TerminalSink(console, input_fn=lambda _prompt: "y", status_line=False)
    async with open_session(pids=[os.getpid()], cascade_id=sim.cascade_id, sink=sink, options=FAST) as s:
        await s.send("kind: readUrlContent https://example.com/r")
        async with asyncio.timeout(30):
            while "agy refused the answer" not in console.export_text(clear=False):
                await asyncio.sleep(0.05)
            await sim.resolve_in_terminal(kind="permission")
        await sim.wait_idle(timeout=30)
    out = console.export_text(clear=False)
    assert out.count("agy refused the answer to: agy asks to read https://example.com/r") == 1
    assert out.count("answer it in agy's terminal") == 1


@pytest.mark.parametrize("allow", [True, False], ids=["y", "n"])
@pytest.mark.parametrize("field", list(CASES))
async def test_every_kind_is_carded_in_words_and_answered_in_its_shape_at_the_prompt(
    sim: Simulator, field: str, allow: bool
) -> None:
    """Every kind of the gates' CASES table (tests/gates/test_kind_answers.py), ``y`` and ``n``: the card
    text in words on the screen, the kind's own labels, and what agy received in the descriptor's
    shape, a deny never in a shape that proceeds."""
    subject, words, allowed, denied = CASES[field]
    asked = FIELD_OF.get(field, field)
    out, message = await answered(sim, f"kind: {field} {subject}".strip(), "y" if allow else "n")
    assert message == {asked: allowed if allow else denied}
    assert proceeds(asked, message) is allow
    assert words in " ".join(out.split())  # (the screen may wrap the card text)
    allow_word = {"deploy": "deploy", "plainElicitation": "accept"}.get(field, "allow")
    deny_word = {"deploy": "cancel the deploy", "plainElicitation": "decline"}.get(field, "deny")
    assert f"y {allow_word} · n {deny_word}" in out
