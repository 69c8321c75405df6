"""The simulated agy TUI in a real tmux server: typed and pasted turns, gate prompts, /clear."""

from __future__ import annotations

from typing import Any

import psutil

from agy_harness.adapters.tmux import find_pane_pid

from .conftest import HttpSteps, TuiPane, footer, is_idle

USER_INPUT = "CORTEX_STEP_TYPE_USER_INPUT"
WAITING = "CORTEX_STEP_STATUS_WAITING"


def turn_done(steps: list[Any]) -> bool:
    """The last USER_INPUT is followed by a DONE text planner response (the model's reply)."""
    last_user = max((i for i, s in enumerate(steps) if s.get("type") == USER_INPUT), default=-1)
    return last_user >= 0 and any(
        s.get("type") == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
        and s.get("status") == "CORTEX_STEP_STATUS_DONE"
        and (s.get("plannerResponse", {}).get("response") or "")
        for s in steps[last_user + 1 :]
    )


def gates(steps: list[Any]) -> list[dict[str, Any]]:
    return [s for s in steps if s.get("status") == WAITING and s.get("requestedInteraction")]


def paste(tui: TuiPane, text: str, *, keep_lf: bool = True) -> None:
    args = ["-p", "-d", "-b", "t"] + (["-r"] if keep_lf else [])
    tui.server.cmd("set-buffer", "-b", "t", "--", text)
    tui.server.cmd("paste-buffer", *args, "-t", tui.pane_id)


async def test_typed_turn_and_enter_records_exactly_one_user_input(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("Say hi to the tmux pane")
    await tui.wait_screen(lambda lines: "> Say hi to the tmux pane" in lines)
    assert await rpc.user_inputs(tui.cascade_id) == []  # typing alone submits nothing
    tui.send_key("Enter")
    await rpc.wait_steps(tui.cascade_id, turn_done)
    await tui.wait_screen(is_idle)
    assert await rpc.user_inputs(tui.cascade_id) == ["Say hi to the tmux pane"]
    screen = await tui.wait_screen(lambda lines: any(line.startswith("✦ ") for line in lines))
    assert "› Say hi to the tmux pane" in screen


async def test_bracketed_paste_keeps_newlines_in_one_turn(tui: TuiPane, rpc: HttpSteps) -> None:
    text = "first line of the paste\nsecond line\nthird line"
    paste(tui, text)
    await tui.wait_screen(lambda lines: "  third line" in lines)
    assert await rpc.user_inputs(tui.cascade_id) == []  # the pasted newlines did not submit
    tui.send_key("Enter")
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == [text]


async def test_pasted_carriage_returns_are_newlines_not_enter(tui: TuiPane, rpc: HttpSteps) -> None:
    # tmux's default paste turns LF into CR, as a terminal does: inside a bracketed paste it is a newline.
    paste(tui, "alpha\nbeta", keep_lf=False)
    await tui.wait_screen(lambda lines: "  beta" in lines)
    assert await rpc.user_inputs(tui.cascade_id) == []
    tui.send_key("Enter")
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == ["alpha\nbeta"]


async def test_backspace_edits_the_composer(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("Say heyy")
    tui.send_key("BSpace", "BSpace")
    tui.send_literal("llo there")
    await tui.wait_screen(lambda lines: "> Say hello there" in lines)
    tui.send_key("Enter")
    await rpc.wait_steps(tui.cascade_id, turn_done)
    assert await rpc.user_inputs(tui.cascade_id) == ["Say hello there"]


async def test_permission_gate_answered_by_number_leaves_waiting(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("run: pwd")
    tui.send_key("Enter")
    steps = await rpc.wait_steps(tui.cascade_id, lambda s: bool(gates(s)))
    gate = gates(steps)[0]
    index = gate["metadata"]["sourceTrajectoryStepInfo"].get("stepIndex", 0)
    screen = await tui.wait_screen(lambda lines: footer(lines).endswith("· waiting for approval"))
    at = screen.index("? Allow this command?")  # the request, whole, then agy's menu
    assert screen[at + 1 : at + 3] == ["  $ pwd", "  in /home/agy/.gemini/antigravity-cli/scratch"]
    assert "  1. Yes, run command" in screen and "  4. No, cancel" in screen
    tui.send_literal("1")
    tui.send_key("Enter")

    def settled(s: list[Any]) -> bool:
        return s[index].get("status") != WAITING and turn_done(s)

    steps = await rpc.wait_steps(tui.cascade_id, settled)
    assert steps[index]["status"] == "CORTEX_STEP_STATUS_DONE"
    assert steps[index]["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
    assert await rpc.user_inputs(tui.cascade_id) == ["run: pwd"]  # the answer is not a turn
    await tui.wait_screen(is_idle)


async def test_permission_gate_denied_with_n(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("run: pwd")
    tui.send_key("Enter")
    steps = await rpc.wait_steps(tui.cascade_id, lambda s: bool(gates(s)))
    index = gates(steps)[0]["metadata"]["sourceTrajectoryStepInfo"].get("stepIndex", 0)
    await tui.wait_screen(lambda lines: footer(lines).endswith("· waiting for approval"))
    tui.send_literal("n")
    tui.send_key("Enter")
    steps = await rpc.wait_steps(tui.cascade_id, lambda s: s[index].get("status") != WAITING and turn_done(s))
    assert steps[index]["status"] == "CORTEX_STEP_STATUS_ERROR"


async def test_question_gate_answered_by_number(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("ask: which part should we work on first?")
    tui.send_key("Enter")
    steps = await rpc.wait_steps(tui.cascade_id, lambda s: bool(gates(s)))
    gate = gates(steps)[0]
    index = gate["metadata"]["sourceTrajectoryStepInfo"].get("stepIndex", 0)
    options = gate["requestedInteraction"]["askQuestion"]["questions"][0]["options"]
    await tui.wait_screen(lambda lines: f"  2. {options[1]['text']}" in lines)
    tui.send_literal("2")
    tui.send_key("Enter")
    steps = await rpc.wait_steps(tui.cascade_id, lambda s: s[index].get("status") != WAITING and turn_done(s))
    assert steps[index]["status"] == "CORTEX_STEP_STATUS_DONE"
    reply = [s for s in steps if s.get("type") == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"][-1]
    assert options[1]["text"][:20] in reply["plannerResponse"]["response"]


async def test_text_that_is_not_an_answer_keeps_the_gate_waiting(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("run: pwd")
    tui.send_key("Enter")
    steps = await rpc.wait_steps(tui.cascade_id, lambda s: bool(gates(s)))
    index = gates(steps)[0]["metadata"]["sourceTrajectoryStepInfo"].get("stepIndex", 0)
    await tui.wait_screen(lambda lines: footer(lines).endswith("· waiting for approval"))
    tui.send_literal("maybe")
    tui.send_key("Enter")
    await tui.wait_screen(lambda lines: "! not an answer to the prompt above" in lines)
    assert (await rpc.read_steps(tui.cascade_id))[index]["status"] == WAITING


async def test_clear_mints_a_new_cascade_and_rewrites_the_port_file(tui: TuiPane, rpc: HttpSteps) -> None:
    tui.send_literal("/clear")
    tui.send_key("Enter")
    await tui.wait_screen(is_idle)

    def rotated() -> bool:
        parts = tui.port_file.read_text().split()
        return len(parts) == 2 and parts[1] != tui.cascade_id

    await tui.wait_screen(lambda _lines: rotated())
    port, new_id = tui.port_file.read_text().split()
    assert int(port) == tui.port
    listed = (await rpc.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"]
    assert new_id in listed
    tui.send_literal("Say hi again")
    tui.send_key("Enter")
    await rpc.wait_steps(new_id, turn_done)
    assert await rpc.user_inputs(new_id) == ["Say hi again"]
    assert await rpc.user_inputs(tui.cascade_id) == []


def test_pane_pid_owns_the_language_server_port(tui: TuiPane) -> None:
    pid = find_pane_pid(tui.pane_id, tui.server)
    assert pid == tui.pid
    ports = {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.status == "LISTEN"}
    assert tui.port in ports
