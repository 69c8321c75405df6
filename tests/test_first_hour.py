"""The README's first hour, taken at its word: the five steps' commands, in the README's order, each
run as a newcomer would on the simulator, in a home directory of its own (nothing of the user's is
read or written): the demo, a simulator and ``attach --port N`` to it, the board, an editor's ACP
agent, then ``audit`` and ``policy`` over the decisions the demo recorded. Each command is the
README's block itself (``N`` replaced by the port the simulator printed); only what a test needs is
added (``--auto --pace 0`` to the demo, whose gates a person answers at the keyboard)."""

from __future__ import annotations

import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acp_agent.helpers import RecordingClient, acp_agent, prompt

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BOUND = 120.0  # a hang's bound, not a speed claim: every step here ends in seconds


def first_hour() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## The first hour")
    return text[start : text.index("\n## ", start + 1)]


def blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", first_hour(), re.S)]


def test_the_first_hour_is_five_steps_and_these_commands() -> None:
    steps = re.findall(r"^\*\*(\d)\. ", first_hour(), re.M)
    assert steps == ["1", "2", "3", "4", "5"]
    assert blocks() == [
        "agy-harness demo",
        "agy-harness sim",
        "agy-harness attach --port N",
        "agy-harness board --sim",
        "agy-harness acp --sim",
        "agy-harness audit\nagy-harness audit verify\n"
        "agy-harness policy explain 'git status'\nagy-harness policy propose 'git status'",
    ]


def command(line: str) -> list[str]:
    """A README line as argv: ``agy-harness`` is this checkout's script, next to this interpreter."""
    argv = shlex.split(line)
    assert argv[0] == "agy-harness"
    script = Path(sys.executable).parent / "agy-harness"
    return [str(script) if script.exists() else "agy-harness", *argv[1:]]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("newcomer")


def env_of(home: Path) -> dict[str, str]:
    """A newcomer's environment: their own home, no XDG or agy-harness setting of this machine's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("XDG_") and not (k.startswith("AGY_HARNESS_") and k != "AGY_HARNESS_CACHE")
    }
    (home / "home").mkdir(exist_ok=True)
    return {**env, "HOME": str(home / "home"), "COLUMNS": "100", "NO_COLOR": "1"}


def run(line: str, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(line), *extra],
        cwd=home,
        env=env_of(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )


class Running:
    """A command left running (as in a terminal of its own): its stdout read line by line."""

    def __init__(self, argv: list[str], home: Path, stdin: bool = False) -> None:
        self.proc = subprocess.Popen(
            argv,
            cwd=home,
            env=env_of(home),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, seen: Callable[[str], bool]) -> str:
        """The first line ``seen`` accepts (reading at most BOUND seconds, else a failure)."""
        while True:
            try:
                line = self._queue.get(timeout=BOUND)
            except queue.Empty:
                raise AssertionError(f"not seen in {BOUND} s; read: {self.lines[-20:]}") from None
            if line is None:
                raise AssertionError(f"ended ({self.proc.wait()}) before; read: {self.lines[-20:]}")
            self.lines.append(line)
            if seen(line):
                return line

    def type(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def ctrl_c(self) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.proc.wait(timeout=BOUND)

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def running() -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(argv: list[str], home: Path, stdin: bool = False) -> Running:
        started.append(Running(argv, home, stdin))
        return started[-1]

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture(scope="module")
def after_the_demo(home: Path) -> subprocess.CompletedProcess[str]:
    """Step 1, the README's ``agy-harness demo``, its gates answered by the visible policy."""
    return run(blocks()[0], home, "--auto", "--pace", "0")


def test_1_the_demo(after_the_demo: subprocess.CompletedProcess[str]) -> None:
    out = after_the_demo
    assert out.returncode == 0, out.stderr
    assert "demo done" in out.stdout and "git status" in out.stdout
    assert "Traceback" not in out.stderr


def test_2_sim_and_attach(home: Path, running: Callable[..., Running]) -> None:
    sim = running(command(blocks()[1]), home)
    port = sim.until(lambda line: line.startswith("port ")).split()[1]
    sim.until(lambda line: line.startswith("cascade "))
    attach = running(command(blocks()[2].replace(" N", f" {port}")), home, stdin=True)
    attach.until(lambda line: "attached" in line)
    attach.type("Say hello in one short sentence.\n")
    reply = attach.until(lambda line: line.startswith("◆ "))
    assert "Hello" in reply
    attach.until(lambda line: line.startswith("○ idle"))
    assert attach.proc.stdin is not None
    attach.proc.stdin.close()  # Ctrl-D: detaches
    attach.until(lambda line: "detached" in line)
    assert attach.proc.wait(timeout=BOUND) == 0
    assert sim.ctrl_c() == 130
    assert "Traceback" not in sim.stderr() + attach.stderr()


def test_3_the_board(home: Path, running: Callable[..., Running]) -> None:
    board = running(command(blocks()[3]), home)
    line = board.until(lambda line: line.startswith("agy board: open http://127.0.0.1:"))
    url = line.split("open ", 1)[1].strip()
    page = httpx.get(url, timeout=BOUND, trust_env=False)
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert httpx.get(url.split("?")[0], timeout=BOUND, trust_env=False).status_code == 403  # no token
    assert board.ctrl_c() == 130
    assert "Traceback" not in board.stderr()


async def test_4_an_editor(home: Path) -> None:
    argv = shlex.split(blocks()[4])
    assert argv[:2] == ["agy-harness", "acp"]

    async def allow(tool_call: Any, options: list[Any]) -> str:
        return "allow"

    client = RecordingClient(permission=allow)
    async with acp_agent(client, "--sim-pace", "0", where=tuple(argv[2:]), env=env_of(home)) as conn:
        session = (await conn.new_session(cwd=str(home), mcp_servers=[])).session_id
        assert (await prompt(conn, session, "run: git status")).stop_reason == "end_turn"
        [(_, asked, _options)] = client.permission_requests  # the editor was asked, and its allow ran it
        assert "git status" in asked.title and client.text(session)


def test_5_audit_and_policy(home: Path, after_the_demo: subprocess.CompletedProcess[str]) -> None:
    audit, verify, explain, propose = (run(line, home) for line in blocks()[5].splitlines())
    assert audit.returncode == 0, audit.stderr
    assert re.search(r"allow .* on demo .*git status", audit.stdout), audit.stdout
    assert re.search(r"deny .* on demo .*rm -rf build", audit.stdout), audit.stdout
    assert verify.returncode == 0 and "verifies" in verify.stdout, verify.stdout + verify.stderr
    assert explain.returncode == 0 and "decision: ask" in explain.stdout, explain.stdout + explain.stderr
    assert propose.returncode == 0, propose.stderr
    assert 'match = ["git status"]' in propose.stdout and "exact = true" in propose.stdout
