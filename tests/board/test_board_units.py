"""The board's pure parts: what an answer from the page may be, what a card binds, the notifier's
settings and text, agy's timestamps, and a conversation's digest from recorded steps."""

from __future__ import annotations

import pytest

from agy_harness.composition.entrypoints.board.app import answer_value
from agy_harness.composition.entrypoints.board.cards import gate_card
from agy_harness.composition.entrypoints.board.fleet import digest, epoch
from agy_harness.composition.entrypoints.board.notify import Notifier, NotifySetupError, parse_urls, redact
from agy_harness.core.answers import AnswerError
from agy_harness.core.display import request_hash
from agy_harness.ports.events import GateOpened, PermissionRequest
from agy_harness.ports.protocols import GateAnswer


def _gate(command: str, cwd: str = "/w") -> GateOpened:
    return GateOpened(
        id="t/3/gate", cascade_id="c", gate_id="c/t/3", kind="permission", trajectory_id="t", step_index=3,
        tool_name="run_command", permission=PermissionRequest(command_line=command, cwd=cwd),
    )  # fmt: skip


def test_the_page_answers_in_four_shapes_only() -> None:
    assert answer_value("allow") is True
    assert answer_value("deny") is False
    assert answer_value("decline") == "decline"
    picked = answer_value({"questions": [{"choices": ["1", "3"], "write_in": "also lint"}]})
    assert picked == GateAnswer(selections=(("1", "3"),), write_ins=("also lint",))
    for bad in (True, "yes", "ALLOW", None, [], {}, {"questions": []}, {"questions": [{"choices": [1]}]},
                {"questions": [{"choices": ["1"], "write_in": 5}]}):  # fmt: skip
        with pytest.raises(AnswerError):
            answer_value(bad)


def test_a_card_binds_what_it_shows() -> None:
    card = gate_card(_gate("ls"))
    assert card["command"] == f"ls\n⋯ {request_hash('ls')} ⋯" and card["cwd"] == "/w"
    assert gate_card(_gate("ls"))["shown"] == card["shown"]
    assert gate_card(_gate("ls", cwd="/elsewhere"))["shown"] != card["shown"]
    assert gate_card(_gate("rm -rf ~"))["shown"] != card["shown"]
    hostile = gate_card(_gate("ls\x1b[2K\rrm -rf ~ \u202e"))
    assert hostile["command"].split("\n")[0] == "ls\\x1b[2K\\rrm -rf ~ \\u202e"


def test_the_card_shows_what_will_run_by_the_core_rule_and_binds_the_request() -> None:
    """Issue #26: invisible characters shown, blank-line runs collapsed with a count; the card's
    digest covers the request's digest, so a card answered for one request never answers another."""
    command = "rm -rf ~/work\u200d #" + "\n" * 40 + "ls -la\U000e0041"
    card = gate_card(_gate(command))
    assert card["command"] == (
        f"rm -rf ~/work\\u200d #\n⋯ 39 blank lines ⋯\nls -la\\U000e0041\n⋯ {request_hash(command)} ⋯"
    )
    same_text = _gate("ls")
    assert (
        gate_card(same_text.model_copy(update={"digest": "a" * 32}))["shown"] != gate_card(same_text)["shown"]
    )


def test_notifications_are_explicit_redacted_and_carry_no_request_by_default() -> None:
    with pytest.raises(NotifySetupError, match="no notification URLs"):
        Notifier(())
    with pytest.raises(NotifySetupError, match="unknown"):
        Notifier(("json://127.0.0.1:1/x",), ("gate", "everything"))
    assert parse_urls("# mine\nntfys://ntfy.sh/t, json://h/x\n") == ("ntfys://ntfy.sh/t", "json://h/x")
    assert redact("pover://user@token", 2) == "pover://… (URL #3)"
    plain = Notifier(("json://h/x",))
    plain.link = "http://127.0.0.1:8000/"
    note = plain.note("gate", "proj", ask="agy asks to run `rm -rf build`", card="abcd1234")
    assert note.body == "agy needs you in proj.\nhttp://127.0.0.1:8000/#card-abcd1234"
    assert (
        plain.note("failed", "proj", reason="GITHUB_TOKEN=x").body
        == "agy's turn failed in proj.\nhttp://127.0.0.1:8000/"
    )
    told = Notifier(("json://h/x",), content=True)
    assert (
        told.note("gate", "proj", ask="agy asks to run `ls`").body
        == "agy needs you in proj. agy asks to run `ls`"
    )


def test_agy_times_read_with_nanoseconds() -> None:
    assert epoch("2026-12-03T06:00:00.123456789Z") == pytest.approx(1796277600.123456)
    assert epoch("2026-12-03T06:00:00Z") == 1796277600.0
    assert epoch("") == 0.0 and epoch("yesterday") == 0.0


def test_a_digest_reads_the_waiting_gate_model_and_title() -> None:
    from agy_harness.adapters.simulator import Simulator

    async def steps() -> list[dict[str, object]]:
        async with Simulator(pace=0, gate_timeout=None) as sim:
            await sim.submit_user_turn("run: make   test")
            await sim.wait_idle()
            return sim.steps()

    import asyncio

    d = digest("c", asyncio.run(steps()))
    assert d.title == "run: make test"
    assert d.waiting == 1 and not d.failed
    assert d.model and d.tokens_in > 0


def test_a_typed_content_is_an_accept_carrying_it_and_nothing_else_is() -> None:
    assert answer_value({"accept": ' {"account": "me"} '}) == GateAnswer(
        allow=True, content='{"account": "me"}'
    )
    for bad in ({"accept": ""}, {"accept": "  "}, {"accept": {"account": "me"}}, {"accept": "x", "deny": ""}):
        with pytest.raises(AnswerError):
            answer_value(bad)


def test_a_command_asking_to_leave_the_sandbox_says_so_on_its_card_and_in_the_editor() -> None:
    """The step asks for agy's sandbox override: the board's card flags it (the page says an allow does
    not grant it) and the editor's title says it; a plain command carries no such flag."""
    from agy_harness.composition.entrypoints.acp.mapping import gate_title
    from tests.gates.test_kinds import opened, waiting_step

    raw = waiting_step("runCommand", "make deploy")
    raw["runCommand"]["sandboxOverride"] = True
    gate, _ = opened(raw)
    plain, _ = opened(waiting_step("runCommand", "make deploy"))
    assert gate_card(gate)["sandbox"] is True and gate_card(plain)["sandbox"] is False
    assert "outside agy's sandbox (an allow here does not grant that" in gate_title(gate)
    assert "sandbox" not in gate_title(plain)
