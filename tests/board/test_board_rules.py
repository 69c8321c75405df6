""" "Always" that never widens, on the board (real chromium, the simulator): a lasting allow offers the
narrowest rule for that exact request, editable; "Save as my rule" saves it into the user tier's
proposed.toml (0600) only if it loads and its examples hold, else says why and saves nothing; after 3
identical approvals in a session the next card offers it too. Nothing is saved without the click."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agy_harness.adapters.policy.files import Tier, load_policy
from agy_harness.adapters.simulator import Simulator
from agy_harness.ports.events import GateOpened, PermissionRequest
from tests.chromium import SHARED

from .helpers import board_on, require_chromium, until

pytestmark = SHARED  # the worker's chromium, on the session's loop


@pytest.fixture(autouse=True)
def _chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    require_chromium()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "agy-harness" / "policy" / "proposed.toml"


def gate(line: str, cwd: str) -> GateOpened:
    return GateOpened(
        id="g", cascade_id="c", gate_id="g", kind="permission", trajectory_id="t", step_index=1,
        tool_name="run_command", permission=PermissionRequest(command_line=line, cwd=cwd),
    )  # fmt: skip


async def test_always_allow_offers_the_narrowest_rule_to_edit_and_save(tmp_path: Path) -> None:
    saved = tmp_path / "config" / "agy-harness" / "policy" / "proposed.toml"
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await sim.submit_user_turn("run: `ls -la`")
        async with board_on(sim) as (board, page):
            card = page.locator("#cards .card", has_text="ls -la")
            await card.wait_for()
            assert await card.locator(".proposal").count() == 0  # nothing offered before a lasting allow
            [(asked, _)] = board.board.live[sim.cascade_id].gates.values()
            await card.locator("button[data-scope=global]").click()  # "Always allow…"
            box = page.locator("#proposals .proposal")
            await box.wait_for()
            assert "You chose “Always allow" in await box.inner_text()
            rule = page.get_by_label("the proposed rule (edit it before saving)")
            text = await rule.input_value()
            assert 'command = ["ls", "-la"]' in text and "exact = true" in text
            assert '{ command_line = "ls -la"' in text  # the request is its first match example
            assert not saved.exists()  # proposed, never saved alone
            # an edit whose example fails is refused with the reason, nothing saved
            match_line = next(x for x in text.splitlines() if x.startswith("match = "))
            await rule.fill(text.replace(match_line, 'match = ["ls -l"]'))
            await box.get_by_role("button", name="Save as my rule").click()
            alert = box.get_by_role("alert")
            await page.wait_for_function(
                "() => (document.querySelector('#proposals .form-msg') || {}).textContent",
                polling=100,
            )
            refused = await alert.inner_text()
            assert refused.startswith("not saved: ") and "'ls -l' should match but does not" in refused
            assert not saved.exists()
            # edited (its id) and confirmed: saved, 0600, and it answers exactly that request
            await rule.fill(text.replace('id = "always-', 'id = "mine-'))
            await box.get_by_role("button", name="Save as my rule").click()
            await page.locator("[data-act=rule-saved]").wait_for()
            assert f"Saved to {saved}" in await box.inner_text()
            body = saved.read_text()
            assert 'id = "mine-ls-la-' in body and '{ command_line = "ls -la"' in body
            assert stat.S_IMODE(saved.stat().st_mode) == 0o600
            policy = load_policy(tiers=[Tier(2, saved.parent)])
            cwd = asked.permission.cwd if asked.permission else ""
            assert policy.decide(gate("ls -la", cwd)).verdict == "allow"
            assert policy.decide(gate("ls -la /", cwd)).verdict == "ask"  # never wider
            assert policy.decide(gate("ls -la", "/elsewhere")).verdict == "ask"
            assert [e for e in page.errors if "status of 400" not in e] == []  # the refusal's own 400


async def test_three_identical_approvals_offer_the_rule_on_the_next_card(tmp_path: Path) -> None:
    saved = tmp_path / "config" / "agy-harness" / "policy" / "proposed.toml"
    async with Simulator(pace=0, gate_timeout=None) as sim, board_on(sim) as (board, page):
        await page.wait_for_selector(".row")
        for n in range(4):
            await sim.submit_user_turn("run: `git status`")
            card = page.locator("#cards .card[data-kind=permission]")
            await card.wait_for()
            if n < 3:
                assert await card.locator(".proposal").count() == 0
                await card.get_by_role("button", name="Allow once").click()
                await card.wait_for(state="detached")
                await until(lambda: not sim.is_running(sim.cascade_id))
        offered = card.locator(".proposal")
        await offered.wait_for()
        assert "approved this exact command 3 times" in await offered.inner_text()
        assert 'command = ["git", "status"]' in await offered.locator("textarea").input_value()
        assert not saved.exists() and await page.locator("#proposals .proposal").count() == 0
        await offered.get_by_role("button", name="Save as my rule").click()
        await page.locator("[data-act=rule-saved]").wait_for()
        assert 'command = ["git", "status"]' in saved.read_text()
        assert len(board.board.live) == 1 and page.errors == []
