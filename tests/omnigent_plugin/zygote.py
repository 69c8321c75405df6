"""omnigent's own runner zygote (``python -P -m omnigent.runner._zygote``), from which the runner tests
fork their harness processes as a host's runner does.

omnigent 0.19.1 starts a harness process one of two ways (``runtime/harnesses/process_manager.py``,
``_spawn_harness_process``): a runner the host daemon forked from its zygote asks that zygote to fork
the harness (``{"cmd": "fork_harness", "argv": [the _runner flags], "env": {...}}``: the child runs
``omnigent.runtime.harnesses._runner.main(argv)``, ``runner/_zygote.py`` ``_run_harness_child``);
any other runner execs ``python -P -m omnigent.runtime.harnesses._runner`` itself. The fork shares the
zygote's imported graph (fastapi, pydantic, omnigent's runner and schemas): a harness process forked
so cost ~0.3 CPU-seconds to be serving, an exec'd one ~1.25 (measured), and test_runner.py starts one
per test. One zygote per test process (``plugin_zygote``: ~1.7 CPU-seconds to start), talked to over
its control socket the way omnigent's host daemon talks to it; it exits when that socket closes.
The protocol: newline-delimited JSON, one request, one answer (``runner/_zygote.py``'s docstring).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

CONTROL_FD_ENV = "OMNIGENT_RUNNER_ZYGOTE_CONTROL_FD"  # omnigent's ZYGOTE_CONTROL_FD_ENV_VAR
WORKSPACE_ENV = "OMNIGENT_RUNNER_WORKSPACE"  # the harness's cwd (omnigent's RUNNER_WORKSPACE_ENV_VAR)
START_TIMEOUT = 180.0  # the zygote importing omnigent's runner graph, on a loaded machine


class ZygoteError(AssertionError):
    """The zygote refused a request or went away."""


class Zygote:
    """One omnigent runner zygote and its control socket (this process is its "daemon")."""

    def __init__(self, python: Path, workdir: Path) -> None:
        self.python = python
        self.log = workdir / "zygote.log"
        self._lock = threading.Lock()
        self._codes: dict[int, int] = {}  # exit codes the zygote answered (it answers each once)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {**os.environ, CONTROL_FD_ENV: str(theirs.fileno())}
        env.pop("PYTHONPATH", None)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(python), "-P", "-m", "omnigent.runner._zygote"],
                env=env,
                cwd=str(workdir),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=[theirs.fileno()],
            )
        theirs.close()
        self._sock = ours
        self._reader = ours.makefile("rb")
        try:
            assert self.request({"cmd": "ping"}, timeout=START_TIMEOUT) == {"pong": True}
        except BaseException:
            self.close()
            raise

    def request(self, payload: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        with self._lock:
            self._sock.settimeout(timeout)
            try:
                self._sock.sendall(json.dumps(payload).encode() + b"\n")
                line = self._reader.readline()
            except OSError as exc:
                raise ZygoteError(f"zygote gone ({exc}): {self._log_tail()}") from None
        if not line:
            raise ZygoteError(f"zygote closed its socket: {self._log_tail()}")
        answer = json.loads(line)
        assert isinstance(answer, dict), answer
        return answer

    def fork_harness(self, argv: list[str], env: dict[str, str]) -> int:
        """The pid of a harness process forked running ``_runner.main(argv)`` in ``env`` (whole: it
        replaces the child's environment)."""
        answer = self.request({"cmd": "fork_harness", "argv": argv, "env": env})
        if not isinstance(answer.get("pid"), int):
            raise ZygoteError(f"zygote refused to fork a harness: {answer}")
        return int(answer["pid"])

    def returncode(self, pid: int) -> int | None:
        """``pid``'s exit code once the zygote reaped it, else None."""
        if pid not in self._codes:
            code = self.request({"cmd": "poll", "pid": pid}).get("returncode")
            if isinstance(code, int):
                self._codes[pid] = code
        return self._codes.get(pid)

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def close(self) -> None:
        """Close the control socket: the zygote exits (omnigent's daemon-gone path)."""
        self._reader.close()
        self._sock.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
