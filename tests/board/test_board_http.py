"""The board's door and its answer endpoint, over real HTTP against the simulator: no token, a wrong
token, a foreign Host or Origin, a token only in the query or a cookie, a form post, a huge body --
all refused, and nothing reaches agy. A good answer goes through the fail-closed parser."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import signal
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from typing import Any, NamedTuple

import httpx
import psutil
import pytest

from agy_harness.adapters.simulator import Simulator
from agy_harness.composition.entrypoints.board import command
from agy_harness.composition.entrypoints.board.command import running_board

from .helpers import answer_in_terminal, hold_withdrawals, until, waiting_step


async def _ready(sim: Simulator, text: str) -> None:
    await sim.submit_user_turn(text)
    await sim.wait_idle(timeout=10)


def _base(url: str) -> str:
    return url.split("/?")[0]


async def _card(client: httpx.AsyncClient, base: str, token: str) -> dict[str, Any]:
    for _ in range(100):
        board = (await client.get(f"{base}/api/board", params={"token": token})).json()
        if board.get("cards"):
            return dict(board["cards"][0])
        await asyncio.sleep(0.05)
    raise AssertionError("no card on the board")


class _Api(NamedTuple):
    """The board's answer endpoint for its first card: the board, a client, its base URL, the card,
    the card's answer URL and the headers a good post carries."""

    board: Any
    client: httpx.AsyncClient
    base: str
    card: dict[str, Any]
    url: str
    headers: dict[str, str]


@contextlib.asynccontextmanager
async def _board_api(sim: Simulator, text: str) -> AsyncIterator[_Api]:
    """``text`` sent to agy, parked on its gate; the board on ``sim`` and its first card (:class:`_Api`)."""
    await _ready(sim, text)
    async with running_board(agy_ports=[sim.port], tick=0.1) as board, httpx.AsyncClient() as client:
        base = _base(board.url)
        card = await _card(client, base, board.token)
        headers = {"X-Board-Token": board.token, "Content-Type": "application/json"}
        yield _Api(board, client, base, card, f"{base}/api/s/{card['cascade_id']}/answer", headers)


async def test_every_request_needs_the_token_and_posts_need_the_header() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await _ready(sim, "run: rm -rf build")
        async with running_board(agy_ports=[sim.port], tick=0.1) as board, httpx.AsyncClient() as client:
            base, token = _base(board.url), board.token
            card = await _card(client, base, token)
            answer = f"{base}/api/s/{card['cascade_id']}/answer"
            body = {"gate_id": card["gate_id"], "shown": card["shown"], "answer": "allow"}
            good = {"X-Board-Token": token, "Content-Type": "application/json", "Origin": base}

            assert (await client.get(f"{base}/")).status_code == 403
            assert (await client.get(f"{base}/api/board", params={"token": "x" + token})).status_code == 403
            page = await client.get(f"{base}/", params={"token": token})
            assert page.status_code == 200
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
            assert page.headers["x-frame-options"] == "DENY"
            assert page.headers["referrer-policy"] == "no-referrer"
            assert "set-cookie" not in page.headers
            # DNS rebinding: the right token under another name is refused
            rebound = await client.get(
                f"{base}/api/board", params={"token": token}, headers={"Host": "evil.test"}
            )
            assert rebound.status_code == 403

            refused = [
                # the token in the query (a link) or a cookie alone does not answer
                await client.post(answer, params={"token": token}, json=body),
                await client.post(answer, json=body, headers={"Cookie": f"token={token}"}),
                # another site's page, even with the token
                await client.post(answer, json=body, headers={**good, "Origin": "http://evil.test"}),
                await client.post(answer, json=body, headers={**good, "Sec-Fetch-Site": "cross-site"}),
                # a form post (no preflight) is not JSON
                await client.post(
                    answer,
                    content=b"answer=allow",
                    headers={**good, "Content-Type": "application/x-www-form-urlencoded"},
                ),
                # a body past the limit
                await client.post(answer, content=b"{" + b" " * 70000 + b"}", headers=good),
                # nested past the JSON parser's limit (issue #20: one reader for untrusted JSON)
                await client.post(answer, content=b"[" * 30000 + b"]" * 30000, headers=good),
            ]
            assert [r.status_code for r in refused] == [403, 403, 403, 403, 415, 413, 400]
            _, _, step = waiting_step(sim, sim.cascade_id)  # agy still waits: nothing was delivered
            assert step["status"].endswith("WAITING")

            # fail closed: an answer the parser cannot read, or for another card, sends nothing
            vague = await client.post(answer, json={**body, "answer": "maybe"}, headers=good)
            assert vague.status_code == 400 and "not sent" in vague.json()["error"]
            stale = await client.post(answer, json={**body, "shown": "0" * 32}, headers=good)
            assert stale.status_code == 409
            assert waiting_step(sim, sim.cascade_id)[2]["status"].endswith("WAITING")

            denied = await client.post(answer, json={**body, "answer": "deny"}, headers=good)
            assert denied.status_code == 200
            await until(lambda: not sim.is_running())
            run = next(s for s in sim.steps() if s.get("type", "").endswith("RUN_COMMAND"))
            assert run["status"].endswith("ERROR")  # denied: agy did not run it
            again = await client.post(answer, json=body, headers=good)
            assert again.status_code == 410  # the card retired; a late allow reaches nothing


async def test_a_question_answered_with_a_write_in_and_multi_select() -> None:
    async with (
        Simulator(pace=0, gate_timeout=None) as sim,
        _board_api(sim, "ask multiple: which checks should run?") as (_, client, _, card, url, headers),
    ):
        assert card["questions"][0]["multi"] is True
        base_body = {"gate_id": card["gate_id"], "shown": card["shown"]}
        bad = await client.post(
            url, json={**base_body, "answer": {"questions": [{"choices": ["9"]}]}}, headers=headers
        )
        assert bad.status_code == 400  # no option 9: refused, nothing sent
        picked = {"questions": [{"choices": ["1", "3"], "write_in": "and the linters"}]}
        ok = await client.post(url, json={**base_body, "answer": picked}, headers=headers)
        assert ok.status_code == 200, ok.text
        await until(lambda: not sim.is_running())
        ask = next(s for s in sim.steps() if s.get("type", "").endswith("ASK_QUESTION"))
        assert "and the linters" in str(ask)


async def test_the_board_listens_on_loopback_only_by_default() -> None:
    async with running_board(agy_ports=[]) as board:
        assert board.url.startswith("http://127.0.0.1:")
        mine = [c for c in psutil.Process().net_connections("tcp") if c.laddr and c.laddr.port == board.port]
        assert {c.laddr.ip for c in mine if c.status == psutil.CONN_LISTEN} == {"127.0.0.1"}


async def test_sub_agents_are_rows_under_their_parent() -> None:
    async with Simulator(pace=0, gate_timeout=None) as sim:
        await _ready(sim, "start a subagent to review the code")
        async with running_board(agy_ports=[sim.port], tick=0.1) as board, httpx.AsyncClient() as client:
            base = _base(board.url)
            for _ in range(100):
                rows = (await client.get(f"{base}/api/board", params={"token": board.token})).json()["rows"]
                if len(rows) == 2:
                    break
                await asyncio.sleep(0.05)
            child = next(r for r in rows if r["parent_id"])
            assert child["parent_id"] == sim.cascade_id
            assert child["cascade_id"] in sim.children()
            assert {r["state"] for r in rows} == {"idle"}


async def test_the_command_prints_its_url_serves_and_stops_on_ctrl_c() -> None:
    import os
    import signal
    import sys

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agy_harness.composition.cli", "board", "--sim", "--sim-pace", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(30):
            line = (await proc.stdout.readline()).decode()
        assert line.startswith("agy board: open http://127.0.0.1:")
        url = line.split("open ", 1)[1].strip()
        async with httpx.AsyncClient() as client:
            for _ in range(100):
                board = (await client.get(url.replace("/?", "/api/board?"))).json()
                if len(board["cards"]) == 2:
                    break
                await asyncio.sleep(0.1)
        assert sorted(c["kind"] for c in board["cards"]) == ["permission", "question"]
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(20):
            code = await proc.wait()
        assert code == 130
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_timed_out_gate_retires_and_its_late_answer_reaches_nothing() -> None:
    # Each ask lasts 3 s and agy asks again 20 times: a loaded machine's board, polled here, always sees
    # a re-ask (with one re-ask, a poll that came after both asks timed out found no card at all).
    async with Simulator(pace=0, gate_timeout=3.0, gate_reasks=20) as sim:
        await sim.submit_user_turn("run: make deploy")
        async with running_board(agy_ports=[sim.port], tick=0.1) as board, httpx.AsyncClient() as client:
            base = _base(board.url)
            first = await _card(client, base, board.token)
            for _ in range(400):  # agy gives up on the step and asks again under a new step index
                cards = (await client.get(f"{base}/api/board", params={"token": board.token})).json()["cards"]
                if cards and cards[0]["gate_id"] != first["gate_id"]:
                    break
                await asyncio.sleep(0.05)
            assert [c["gate_id"] for c in cards] != [first["gate_id"]] and len(cards) == 1
            headers = {"X-Board-Token": board.token, "Content-Type": "application/json"}
            late = {"gate_id": first["gate_id"], "shown": first["shown"], "answer": "allow"}
            response = await client.post(
                f"{base}/api/s/{first['cascade_id']}/answer", json=late, headers=headers
            )
            assert response.status_code == 410
            assert response.json()["error"].startswith("agy stopped waiting for this (the request timed out)")
            assert sim.received == []  # the late allow reached neither the old step nor the re-ask
            step = lambda gate_id: int(gate_id.split("/")[-2])  # noqa: E731  (.../<step>/<digest>)
            # agy waits on the card's step (or, 3 s on, on a later re-ask), never the first one's
            assert waiting_step(sim, sim.cascade_id)[1] >= step(cards[0]["gate_id"]) > step(first["gate_id"])


class _ScriptTags(HTMLParser):
    """The nonce attribute of every <script> tag of a page (None for a tag without one)."""

    def __init__(self) -> None:
        super().__init__()
        self.nonces: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.nonces.append(dict(attrs).get("nonce"))


def _directives(csp: str) -> dict[str, list[str]]:
    parts = [d.split() for d in csp.split(";") if d.strip()]
    return {p[0].lower(): p[1:] for p in parts}


async def test_the_page_runs_only_its_own_script_by_a_fresh_nonce_per_load() -> None:
    async with running_board(agy_ports=[]) as board, httpx.AsyncClient() as client:
        nonces = []
        for _ in range(2):
            page = await client.get(f"{_base(board.url)}/", params={"token": board.token})
            assert page.status_code == 200
            tags = _ScriptTags()
            tags.feed(page.text)
            assert tags.nonces and len(set(tags.nonces)) == 1  # every script tag carries the one nonce
            nonce = tags.nonces[0]
            assert nonce
            csp = _directives(page.headers["content-security-policy"])
            # only that nonce may run a script: no 'unsafe-inline', no host, no 'strict-dynamic'
            assert csp["script-src"] == [f"'nonce-{nonce}'"]
            assert csp["default-src"] == ["'none'"]
            assert not {"script-src-elem", "script-src-attr"} & csp.keys()  # no looser per-kind rule
            nonces.append(nonce)
        assert nonces[0] != nonces[1]  # a fresh nonce per page load


@contextlib.asynccontextmanager
async def _on_loopback(asked: list[str], **kw: Any) -> AsyncIterator[Any]:
    """running_board as the command calls it, noting the host it was asked for and binding 127.0.0.1."""
    asked.append(kw.pop("host"))
    async with running_board(host="127.0.0.1", **kw) as board:
        yield board


class _Out(io.StringIO):
    """The command's stdout; ``serving`` is set once it prints the URL (its warnings come before)."""

    def __init__(self) -> None:
        super().__init__()
        self.serving = asyncio.Event()

    def write(self, text: str) -> int:
        if text.startswith("agy board: open"):
            self.serving.set()
        return super().write(text)


async def _warned(host: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``agy-harness board --host HOST`` says on stderr once it serves (the socket on 127.0.0.1)."""
    asked: list[str] = []
    monkeypatch.setattr(command, "running_board", lambda **kw: _on_loopback(asked, **kw))
    args = argparse.Namespace(host=host, port=0, agy_port=[], sim=False, sim_pace=0.0)
    out = _Out()
    serving = asyncio.create_task(command._serve(args, None, out=out))
    try:
        async with asyncio.timeout(10):
            await out.serving.wait()
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        for sig in (signal.SIGINT, signal.SIGTERM):  # the command's Ctrl-C handlers, off this loop
            asyncio.get_running_loop().remove_signal_handler(sig)
    assert asked == [host]
    return capsys.readouterr().err


async def test_a_host_beyond_this_machine_is_warned_about(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    err = await _warned("0.0.0.0", monkeypatch, capsys)
    assert "agy-harness board: WARNING: listening on 0.0.0.0, beyond this machine" in err
    assert "WARNING" not in await _warned("127.0.0.1", monkeypatch, capsys)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.10", False), ("10.0.0.1", False), ("board.example", False)],
)  # fmt: skip
def test_only_a_loopback_host_goes_without_the_warning(host: str, loopback: bool) -> None:
    assert command._loopback(host) is loopback


async def test_a_lost_race_says_answered_elsewhere_410_never_502() -> None:
    async with (
        Simulator(pace=0, gate_timeout=None) as sim,
        _board_api(sim, "run: rm -rf build") as (board, client, base, card, url, headers),
    ):
        body = {"gate_id": card["gate_id"], "shown": card["shown"], "answer": "allow"}
        held, release = hold_withdrawals(board)
        await answer_in_terminal(sim, sim.cascade_id, allow=False)  # agy's terminal answers first
        await until(lambda: not sim.is_running())
        # the board still shows the card; its allow loses the race: 410, who answered, nothing sent
        assert (await client.get(f"{base}/api/board", params={"token": board.token})).json()["cards"]
        lost = await client.post(url, json=body, headers=headers)
        assert lost.status_code == 410, lost.text
        assert lost.json()["error"].startswith("answered elsewhere (in agy's terminal, on ACP")
        assert sim.executed == []
        assert held  # (the withdrawal was indeed held back: this was the race)
        # once the board saw the withdrawal, the same words
        live = next(iter(board.board.live.values()))
        release()
        await until(lambda: card["gate_id"] not in live.gates)
        again = await client.post(url, json=body, headers=headers)
        assert again.status_code == 410
        assert again.json()["error"].startswith("answered elsewhere")


async def test_a_changed_request_is_409_and_an_unreadable_answer_says_what_to_do() -> None:
    async with (
        Simulator(pace=0, gate_timeout=None) as sim,
        _board_api(sim, "ask: which part should we work on first?") as (_, client, _, card, url, headers),
    ):
        ids = {"gate_id": card["gate_id"], "shown": card["shown"]}

        async def error(answer: Any, **extra: str) -> tuple[int, str]:
            r = await client.post(url, json={**ids, **extra, "answer": answer}, headers=headers)
            return r.status_code, r.json()["error"]

        question = "“Which part should we work on first?”"
        assert await error({"questions": [{"choices": ["1"], "write_in": "docs first"}]}) == (
            400,
            f"not sent: {question} takes one answer: pick an option or write your own, not both",
        )
        assert await error({"questions": [{"choices": [], "write_in": " "}]}) == (
            400,
            f"not sent: {question} has no answer yet: pick an option or write your own answer (or Decline)",
        )
        assert await error("allow") == (
            400,
            "not sent: this is a question: pick an option or write your own answer, or Decline",
        )
        status, text = await error({"questions": [{"choices": ["2"]}]}, shown="0" * 32)
        assert status == 409 and text.startswith("the request changed")
        assert waiting_step(sim, sim.cascade_id)[2]["status"].endswith("WAITING")  # nothing sent
