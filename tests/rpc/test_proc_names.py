"""Discovery's first look at a process (:mod:`agy_harness.adapters.rpc.proc_names`): it rules out only
what the full rule (``looks_like_agy`` on psutil's name and command line) would refuse anyway."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from agy_harness.adapters.rpc import proc_names
from agy_harness.adapters.rpc.discovery import PsutilScanner, looks_like_agy
from agy_harness.adapters.rpc.proc_names import ruled_out


def fake(proc: Path, pid: int, comm: bytes, cmdline: bytes) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "comm").write_bytes(comm)
    (proc / str(pid) / "cmdline").write_bytes(cmdline)


@pytest.mark.parametrize(
    ("comm", "cmdline", "out"),
    [
        (b"bash\n", b"bash\0--norc\0", True),
        (b"python3\n", b"python3\0-m\0http.server\0", True),
        (b"python3\n", b"python3\0-m\0agy_harness.adapters.simulator\0", False),  # the simulator
        (b"agy-harness\n", b"/venv/bin/agy-harness\0sim\0", False),
        (b"language_server\n", b"/opt/x/language_server_linux_x64\0", False),  # comm cut at 15
        (b"node\n", b"node\0/opt/AGY/cli.js\0", False),  # any case
        (b"sh\n", b"sh -c language_server --port 0", False),  # rewritten argv: no NULs
    ],
)
def test_only_what_cannot_be_agy_is_ruled_out(tmp_path: Path, comm: bytes, cmdline: bytes, out: bool) -> None:
    fake(tmp_path, 7, comm, cmdline)
    assert ruled_out(7, tmp_path) is out


def test_what_cannot_be_read_or_is_too_long_is_not_ruled_out(tmp_path: Path) -> None:
    assert ruled_out(8, tmp_path) is False  # gone (or not ours to read)
    fake(tmp_path, 9, b"bash\n", b"x" * (proc_names.READ + 1))
    assert ruled_out(9, tmp_path) is False


def test_on_this_machine_every_process_ruled_out_is_one_the_full_rule_refuses() -> None:
    """The real /proc, with a simulator-looking process of our own running beside the others."""
    code = "import time; time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code, "-m", "agy_harness.adapters.simulator"])
    try:
        checked = 0
        for proc in psutil.process_iter():
            try:
                name, cmdline = proc.name(), proc.cmdline()
            except psutil.Error:
                continue
            if ruled_out(proc.pid):
                assert not looks_like_agy(name, cmdline), (proc.pid, name, cmdline)
            checked += 1
        assert checked > 1 and not ruled_out(child.pid)
        assert child.pid in {p.pid for p in PsutilScanner().processes()}
    finally:
        child.kill()
        child.wait()
