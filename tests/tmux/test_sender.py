"""TmuxTurnSender against the simulated TUI in a real tmux server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import libtmux
import pytest

from agy_harness.adapters.tmux import (
    ComposerNotReady,
    PaneNotFound,
    TmuxTurnSender,
    sim_composer,
)

from .conftest import HttpSteps, TuiPane, footer, is_idle, start_tui
from .test_tui import gates, turn_done


def sender(tui: TuiPane, rpc: HttpSteps | None, **kw: Any) -> TmuxTurnSender:
    return TmuxTurnSender(tui.pane_id, server=tui.server, step_reader=rpc, **kw)


async def test_send_records_one_user_input_with_the_text(tui: TuiPane, rpc: HttpSteps) -> None:
    text = "Please say hi\nover two lines"
    await sender(tui, rpc).send(tui.cascade_id, text)
    # send returned: the USER_INPUT is already there
    assert await rpc.user_inputs(tui.cascade_id) == [text]
    await rpc.wait_steps(tui.cascade_id, turn_done)
    await tui.wait_screen(is_idle)
    assert await rpc.user_inputs(tui.cascade_id) == [text]


async def test_control_characters_fail_before_typing(tui: TuiPane, rpc: HttpSteps) -> None:
    # ESC would end the bracketed paste early, ^C would clear the composer: the text could not be
    # delivered exactly, so nothing is typed (it used to be typed with the controls silently cut).
    for raw in ("tab\there\x1b[201~ and bell", "end\x03", "lone \ud800 surrogate"):
        with pytest.raises(ValueError, match="nothing was typed"):
            await sender(tui, rpc).send(tui.cascade_id, raw)
    assert sim_composer(tui.capture()) == ""
    await sender(tui, rpc).send(tui.cascade_id, "tab\there\r\nnext line")  # CRLF is a newline
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == ["tab\there\nnext line"]


async def test_send_without_a_step_reader_verifies_by_the_screen(tui: TuiPane, rpc: HttpSteps) -> None:
    await sender(tui, None).send(tui.cascade_id, "Say hi from the screen check")
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == ["Say hi from the screen check"]


async def test_send_while_the_model_works_waits_for_ready(
    tmux_server: libtmux.Server, tmp_path: Path
) -> None:
    tui = await start_tui(tmux_server, tmp_path, pace=0.15)  # a long reply takes ~1 s
    rpc = HttpSteps(tui.base_url)
    try:
        await _send_while_working(tui, rpc)
    finally:
        await rpc.aclose()


async def _send_while_working(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("Write a long story about a lighthouse keeper.")
    tui.send_key("Enter")
    await tui.wait_screen(lambda lines: footer(lines).endswith("· working"))
    assert not turn_done(await rpc.read_steps(tui.cascade_id))
    task = asyncio.create_task(
        sender(tui, rpc, ready_timeout=30.0).send(tui.cascade_id, "Say hi after the story")
    )
    await rpc.wait_steps(tui.cascade_id, turn_done, timeout=30.0)
    await asyncio.wait_for(task, timeout=30.0)
    steps = await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == [
        "Write a long story about a lighthouse keeper.",
        "Say hi after the story",
    ]
    assert turn_done(steps)


async def test_send_during_a_gate_waits_until_it_is_answered(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("run: pwd")
    tui.send_key("Enter")
    await rpc.wait_steps(tui.cascade_id, lambda s: bool(gates(s)))
    await tui.wait_screen(lambda lines: footer(lines).endswith("· waiting for approval"))
    task = asyncio.create_task(sender(tui, rpc, ready_timeout=30.0).send(tui.cascade_id, "Say hi after pwd"))
    await asyncio.sleep(0.3)  # give a wrong sender the chance to type into the gate prompt
    assert not task.done()
    assert await rpc.user_inputs(tui.cascade_id) == ["run: pwd"]
    tui.send_literal("y")
    tui.send_key("Enter")
    await asyncio.wait_for(task, timeout=30.0)
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == ["run: pwd", "Say hi after pwd"]


async def test_not_ready_in_time_types_nothing(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("run: pwd")
    tui.send_key("Enter")
    await rpc.wait_steps(tui.cascade_id, lambda s: bool(gates(s)))
    with pytest.raises(ComposerNotReady, match="busy"):
        await sender(tui, rpc, ready_timeout=0.3).send(tui.cascade_id, "Say hi too early")
    screen = tui.capture()
    assert sim_composer(screen) == ""  # nothing was typed into the gate prompt
    assert not any("too early" in line for line in screen)
    assert await rpc.user_inputs(tui.cascade_id) == ["run: pwd"]


async def test_unsent_text_in_the_composer_is_not_mixed_with_the_turn(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("half typed")
    await tui.wait_screen(lambda lines: "> half typed" in lines)
    with pytest.raises(ComposerNotReady, match="unsent text"):
        await sender(tui, rpc, ready_timeout=0.2).send(tui.cascade_id, "Say hi")
    assert await rpc.user_inputs(tui.cascade_id) == []


async def test_a_turn_the_reader_cannot_see_is_unconfirmed_and_not_resent(
    tui: TuiPane, rpc: HttpSteps
) -> None:
    # The pane serves its own cascade: a USER_INPUT never shows up on the one asked for.
    other = "00000000-0000-0000-0000-000000000000"

    class EmptyReader:
        async def read_steps(self, cascade_id: str) -> list[Any]:
            return []

    s = TmuxTurnSender(
        tui.pane_id, server=tui.server, step_reader=EmptyReader(), start_timeout=0.8, retries=2
    )
    await s.send(other, "Say hi elsewhere")  # submitted: never a failure (a retry would submit twice)
    assert len(s.unconfirmed) == 1 and "another cascade" in s.unconfirmed[0]
    await rpc.wait_steps(tui.cascade_id, turn_done)
    await tui.wait_screen(is_idle)
    # The retries never typed again: exactly one submission.
    assert await rpc.user_inputs(tui.cascade_id) == ["Say hi elsewhere"]


async def test_lost_enter_is_pressed_again_without_retyping(tui: TuiPane, rpc: HttpSteps) -> None:
    class DroppingEnter(TmuxTurnSender):
        dropped = 0

        async def _enter(self) -> None:
            if not self.dropped:
                self.dropped += 1
                return  # the first Enter never reaches the pane
            await super()._enter()

    s = DroppingEnter(tui.pane_id, server=tui.server, step_reader=rpc, start_timeout=3.0, retries=2)
    await s.send(tui.cascade_id, "Say hi despite a lost key")
    assert s.dropped == 1
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == ["Say hi despite a lost key"]


async def test_lost_paste_is_pasted_again_once(tui: TuiPane, rpc: HttpSteps) -> None:
    class DroppingPaste(TmuxTurnSender):
        pastes = 0

        async def _paste(self, text: str) -> None:
            self.pastes += 1
            if self.pastes > 1:
                await super()._paste(text)

    s = DroppingPaste(tui.pane_id, server=tui.server, step_reader=rpc, start_timeout=3.0, retries=2)
    await s.send(tui.cascade_id, "Say hi after a lost paste")
    assert s.pastes == 2
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == ["Say hi after a lost paste"]


async def test_missing_pane_is_a_typed_error(tui: TuiPane) -> None:
    with pytest.raises(PaneNotFound):
        await TmuxTurnSender("%999", server=tui.server, ready_timeout=0.2).send(tui.cascade_id, "x")


async def test_a_text_longer_than_a_tmux_command_is_one_turn(tui: TuiPane, rpc: HttpSteps) -> None:
    # tmux refuses commands above ~16 KiB: the buffer is loaded in chunks, then pasted once.
    text = "\n".join(f"Say hi, line {i:04d} é✦ " + "abcdefghij" * 8 for i in range(250))
    assert len(text.encode()) > 20000
    await sender(tui, rpc).send(tui.cascade_id, text)
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == [text]


@pytest.mark.parametrize(
    "text",
    [
        ";",
        "echo a;",
        "run: ls; echo done;",
        "a \\; b \\\\; c",
        "x" * 7999 + ";" + "y" * 50 + ";",  # a ';' where the old 8000-byte chunks ended
        "é" * 3999 + ";\\;" + "✦" * 3000 + ";",
        "𝄞 👩\u200d💻 ünïcödé ; ok",
    ],
    ids=["semicolon", "trailing", "several", "escaped", "chunk-end", "chunk-end-multibyte", "unicode"],
)
async def test_the_exact_text_is_delivered(tui: TuiPane, rpc: HttpSteps, text: str) -> None:
    await sender(tui, rpc).send(tui.cascade_id, text)  # used to lose ';' and raise TurnUnconfirmed
    assert await rpc.user_inputs(tui.cascade_id) == [text]
