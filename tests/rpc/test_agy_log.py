"""Discovery reads agy's own log line first (``Language server listening on random port at N for
HTTPS``, issue #13's evidence; the reference's _logged_rpc_ports), then scans sockets. The simulator
writes the same lines, so ``attach`` finds it by its log."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agy_harness.adapters.rpc.agy_log import log_file_from_cmdline, logged_port, ports_in_log
from agy_harness.adapters.rpc.discovery import AgyProcess, PsutilScanner, Resolver
from agy_harness.adapters.simulator import Simulator

LOG = """\
I1203 05:00:00.000001   1111 server.go:88] Starting language server process with pid 1111
I1203 05:00:00.100000   1111 server.go:97] Language server listening on random port at 40001 for HTTPS (gRPC)
I1203 05:00:00.100001   1111 server.go:98] Language server listening on random port at 40002 for HTTP
I1203 06:00:00.000001   2222 server.go:88] Starting language server process with pid 2222
W1203 06:00:00.050000   2222 other.go:12] something else
I1203 06:00:00.100000   2222 server.go:97] Language server listening on random port at 40011 for HTTPS (gRPC)
I1203 06:00:00.100001   2222 server.go:98] Language server listening on random port at 40012 for HTTP
"""


def test_the_https_line_of_the_right_process_is_taken() -> None:
    assert ports_in_log(LOG, 1111, untagged_ok=False) == [40001]
    assert ports_in_log(LOG, 2222, untagged_ok=False) == [40011]
    assert ports_in_log(LOG, 3333, untagged_ok=True) == []
    untagged = "\n".join(line for line in LOG.splitlines() if "Starting" not in line)
    assert ports_in_log(untagged, 1111, untagged_ok=True) == [40001, 40011]
    assert ports_in_log(untagged, 1111, untagged_ok=False) == []
    assert ports_in_log("Language server listening on random port at 1 for HTTPS", 1, untagged_ok=True) == []


def test_the_log_file_flag(tmp_path: Path) -> None:
    assert log_file_from_cmdline(["agy", "--log-file", "/x/a.log"]) == Path("/x/a.log")
    assert log_file_from_cmdline(["agy", "--log-file=/x/b.log"]) == Path("/x/b.log")
    assert log_file_from_cmdline(["agy", "--", "--log-file", "/x/c.log"]) is None
    log = tmp_path / "cli.log"
    log.write_text(LOG)
    assert logged_port(2222, ["agy", "--log-file", str(log)]) == 40011
    assert logged_port(2222, ["agy"], logs=[log]) == 40011  # the default cli.log
    assert logged_port(2222, ["agy"], logs=[tmp_path / "missing.log"]) is None


class LogOnlyScanner(PsutilScanner):
    """A host where sockets cannot be attributed to agy's process (restricted /proc): only the log can
    name the port."""

    def __init__(self, cmdline: list[str], pid: int | None = None, name: str = "agy") -> None:
        self.cmdline = tuple(cmdline)
        self.pid, self.name = pid or os.getpid(), name

    def processes(self, *, pids=None, root_pid=None):  # type: ignore[no-untyped-def]
        return [AgyProcess(self.pid, self.name, self.cmdline)]

    def listen_ports(self, pid: int) -> set[int]:
        return set()


async def test_discovery_binds_the_port_the_simulators_log_names(tmp_path: Path) -> None:
    log = tmp_path / "cli.log"
    async with Simulator(log_file=log) as sim:
        text = log.read_text()
        assert f"Language server listening on random port at {sim.port} for HTTPS (gRPC)" in text
        assert f"Starting language server process with pid {os.getpid()}" in text
        binding = await Resolver(
            sim.cascade_id, scanner=LogOnlyScanner(["agy", "--log-file", str(log)])
        ).resolve()
        assert binding.port == sim.port
        await sim.restart()  # a new port, a new line: found again
        binding = await Resolver(
            sim.cascade_id, scanner=LogOnlyScanner(["agy", "--log-file", str(log)])
        ).resolve()
        assert binding.port == sim.port


async def test_a_stale_log_falls_back_to_the_socket_scan(tmp_path: Path) -> None:
    log = tmp_path / "cli.log"
    log.write_text(LOG.replace("2222", str(os.getpid())))  # names ports nobody listens on
    async with Simulator() as sim:
        resolver = Resolver(sim.cascade_id, pids=[os.getpid()])
        resolver._scanner = type(  # the real scan, with the stale log on the command line
            "S",
            (PsutilScanner,),
            {
                "processes": lambda self, **kw: [
                    AgyProcess(os.getpid(), "agy", ("agy", "--log-file", str(log)))
                ]
            },
        )()
        assert (await resolver.resolve()).port == sim.port


@pytest.mark.skipif(sys.platform != "linux", reason="process discovery is tested on Linux")
async def test_agy_harness_sim_log_file_is_found_by_its_log(tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agy_harness.composition.cli",
            "sim",
            "--pace",
            "0",
            "--log-file",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(4)]  # type: ignore[union-attr]
        port = int(next(x for x in lines if x.startswith("port ")).split()[1])
        cascade = next(x for x in lines if x.startswith("cascade ")).split()[1]
        deadline = time.monotonic() + 10
        while f"at {port} for HTTPS" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        scanner = LogOnlyScanner([sys.executable, "--log-file", str(log)], pid=proc.pid, name="python")
        assert (await Resolver(cascade, scanner=scanner).resolve()).port == port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
