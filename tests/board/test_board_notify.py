"""Notifications through Apprise, against receivers on 127.0.0.1: healthy ones (Apprise's json:// and
ntfy:// plugins) and hostile ones (an endless body, one byte every 2 s, never answering). The board's
memory stays bounded, the next notification still reaches the healthy receivers, and no request
content leaves unless asked for. The URLs come from a 0600 file or the environment, never argv."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.entrypoints.board.command import running_board
from agy_harness.composition.entrypoints.board.notify import Notifier
from tests.in_process import run_cli

from .helpers import answer_in_terminal, receivers, until

pytest.importorskip("apprise")

COMMAND = "rm -rf build"
SECRET_PROMPT = "GITHUB_TOKEN=ghp_secret123 please"


def _message(post: dict[str, Any]) -> str:
    """The text a receiver got (json:// sends 'message', ntfy:// 'message' too)."""
    return str(json.loads(post["body"]).get("message", ""))


async def test_hostile_receivers_hold_nothing_and_no_command_text_leaves() -> None:
    async with (
        receivers("endless", "trickle", "silent", "healthy", "healthy") as (
            endless,
            trickle,
            silent,
            hook,
            ntfy,
        ),
        Simulator(pace=0, gate_timeout=None) as sim,
    ):
        urls = (
            f"json://127.0.0.1:{endless.port}/agy",
            f"json://127.0.0.1:{trickle.port}/agy",
            f"json://127.0.0.1:{silent.port}/agy",
            f"json://127.0.0.1:{hook.port}/agy",
            f"ntfy://127.0.0.1:{ntfy.port}/agy-topic",
        )
        notifier = Notifier(urls, ("gate",), deadline=30.0, memory=160 * 1024 * 1024)
        async with running_board(agy_ports=[sim.port], notifier=notifier, tick=0.1) as board:
            me = psutil.Process()
            before = me.memory_info().rss
            await sim.submit_user_turn(f"{SECRET_PROMPT}: run: `{COMMAND}`")
            first = await hook.wait_for(1)
            await ntfy.wait_for(1)
            # the hostile receivers got the same note and now stream, trickle, or say nothing
            await until(lambda: endless.sent_bytes > 32 << 20 and trickle.sent_bytes > 0, timeout=60)
            assert silent.connections >= 1
            # the next notification goes out while they still hold their sends
            await answer_in_terminal(sim, sim.cascade_id)
            await sim.wait_idle(timeout=10)
            await sim.submit_user_turn("run: `make clean`")
            await hook.wait_for(2)
            await ntfy.wait_for(2)
            await until(lambda: notifier.sent >= 4, timeout=60)
            # every hostile send ends by the deadline (killed), none of it in the board's memory
            await until(lambda: notifier.failed >= 3 and not notifier.busy, timeout=60)
            grown = me.memory_info().rss - before
            assert grown < 64 << 20, f"the board grew by {grown >> 20} MiB"
            assert endless.sent_bytes > 32 << 20  # (it did send a lot: the child read it, not the board)

            # no request content by default: the project and a link to the card, no token
            texts = [_message(p) for p in hook.posts + ntfy.posts]
            for text in texts + [p["body"] for p in endless.posts + trickle.posts + silent.posts]:
                assert COMMAND not in text and "make clean" not in text and "ghp_secret123" not in text
                assert board.token not in text
            project = Path(sim.workspace).name
            assert texts[0].startswith(f"agy needs you in {project}.\nhttp://127.0.0.1:{board.port}/open/")
            assert json.loads(first[0]["body"])["title"] == "agy needs you"


async def test_the_command_text_goes_out_only_when_asked_for_and_logs_keep_urls_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with receivers("healthy") as (hook,), Simulator(pace=0, gate_timeout=None) as sim:
        notifier = Notifier((f"json://agy:hunter2@127.0.0.1:{hook.port}/agy",), ("gate",), content=True)
        async with running_board(agy_ports=[sim.port], notifier=notifier, tick=0.1):
            await sim.submit_user_turn(f"run: `{COMMAND}`")
            post = (await hook.wait_for(1))[0]
            assert f"agy asks to run `{COMMAND}`" in _message(post)
            assert post["headers"]["authorization"].startswith(
                "Basic "
            )  # the URL's secret went where it goes
            await until(lambda: notifier.sent == 1)
        assert "board: gate notification sent to json://… (URL #1)" in caplog.text
        assert "hunter2" not in caplog.text


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``agy-harness board ARGS`` in this process (tests/in_process.py: the same argv, stdout, stderr
    and exit code); the first case of the test below runs as a process of its own (what a shell sees)."""
    return run_cli("board", *args, env=env)


# (in this process the board reads the URLs with Apprise, whose import warns of the standard library's
# ``imghdr`` on Python 3.11-3.12: Apprise's own, nothing of the board's)
@pytest.mark.filterwarnings("ignore:'imghdr' is deprecated:DeprecationWarning")
def test_urls_come_from_a_private_file_or_the_environment_never_argv(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-m", "agy_harness.composition.cli", "board", "--webhook", "https://ntfy.sh/my-topic"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert gone.returncode == 2
    assert gone.stderr.startswith("agy-harness board: --webhook is gone: a URL on the command line is read")
    assert "--notify-urls-file" in gone.stderr and "AGY_HARNESS_NOTIFY_URLS" in gone.stderr
    urls = tmp_path / "urls"
    urls.write_text("# my phone\njson://user:hunter2@127.0.0.1:9/agy\n")
    urls.chmod(0o640)
    shared = _cli("--notify-urls-file", str(urls))
    assert shared.returncode == 2
    assert shared.stderr.strip() == (
        f"agy-harness board: {urls} may be read by others (mode 640); its URLs hold secrets: chmod 600 {urls}"
    )
    urls.chmod(0o600)
    urls.write_text("nonsense://hunter2@x\n")
    bad = _cli("--notify-urls-file", str(urls))
    assert bad.returncode == 2 and "hunter2" not in bad.stderr  # named redacted
    assert bad.stderr.startswith(
        "agy-harness board: notification nonsense://… (URL #1) is not a URL Apprise reads"
    )
    from_env = _cli(env={"AGY_HARNESS_NOTIFY_URLS": "nonsense://hunter2@y"})
    assert from_env.returncode == 2 and "nonsense://… (URL #1)" in from_env.stderr
    assert "hunter2" not in from_env.stderr
    shown = _cli("--help")
    assert "--notify-urls-file PATH" in shown.stdout and "--notify-content" in shown.stdout
    assert "--webhook" not in shown.stdout


async def test_the_gates_notified_are_forgotten_once_gone() -> None:
    """The board remembers a notified gate only while it is open (a live session's replay must not
    notify it twice): gates answered on the board over HTTP, one after another, leave nothing behind,
    so a board running for weeks holds no growing set. On main every gate id stayed."""
    async with receivers("healthy") as (hook,), Simulator(pace=0, gate_timeout=None) as sim:
        notifier = Notifier((f"json://127.0.0.1:{hook.port}/agy",), ("gate",))
        async with running_board(agy_ports=[sim.port], notifier=notifier, tick=0.1) as running:
            board = running.board
            base = running.url.split("/?")[0]
            headers = {"X-Board-Token": running.token, "Content-Type": "application/json", "Origin": base}
            async with httpx.AsyncClient() as client:
                for n in range(1, 4):
                    await sim.submit_user_turn(f"run: `rm -rf build{n}`")
                    await hook.wait_for(n)  # notified once
                    assert len(board._notified) == 1  # the open one
                    cards: list[Any] = []
                    while not cards:  # the card the notification links to, on the board
                        got = await client.get(f"{base}/api/board", params={"token": running.token})
                        cards = got.json().get("cards") or []
                        await asyncio.sleep(0.05)
                    body = {"gate_id": cards[0]["gate_id"], "shown": cards[0]["shown"], "answer": "allow"}
                    answered = await client.post(
                        f"{base}/api/s/{cards[0]['cascade_id']}/answer", json=body, headers=headers
                    )
                    assert answered.status_code == 200, answered.text
                    await sim.wait_idle(timeout=30)
                    await until(lambda: not board._notified, timeout=30)  # withdrawn: forgotten
            assert len(hook.posts) == 3  # each gate notified once
