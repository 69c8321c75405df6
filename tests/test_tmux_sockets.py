"""tests/tmux_sockets.py: a test module that leaves a tmux socket file of its own behind fails (the
file removed), in one process and in parallel; one that removes it passes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sub_pytest import pytest_command
from tests.tmux_sockets import left_behind, tmux_dir

ROOT = Path(__file__).resolve().parents[1]

if shutil.which("tmux") is None:  # (in CI a skip fails the run: tests/ci_skips.py)
    pytest.skip("the tmux binary is not on PATH (.ci/run installs it)", allow_module_level=True)

SAMPLE = """
import os, subprocess, uuid
from pathlib import Path

def test_a_tmux_server_of_its_own():
    name = f"agyh-sample-{{os.getpid()}}-{{uuid.uuid4().hex[:8]}}"
    subprocess.run(["tmux", "-L", name, "new-session", "-d", "sleep 60"], check=True)
    subprocess.run(["tmux", "-L", name, "kill-server"], check=True)
    if {remove}:
        (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{{os.getuid()}}" / name).unlink()

def test_another_in_the_same_module():
    pass
"""

#: one process (``-n 0``: the project's addopts would start ``-n auto`` workers), and two workers
MODES = pytest.mark.parametrize("workers", [["-n", "0"], ["-n", "2"]], ids=["serial", "xdist"])


def _run(tmp_path: Path, *, remove: bool, workers: list[str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SAMPLE.format(remove=remove))
    env = os.environ | {"TMUX_TMPDIR": str(tmp_path)}  # (the sample's sockets: this test's own)
    plugins = ["-p", "no:cacheprovider", "-p", "tests.tmux_sockets", *workers]
    return subprocess.run(
        pytest_command("-q", *plugins, str(tmp_path / "test_sample.py")),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@MODES
def test_a_socket_file_left_behind_fails_the_module_and_is_removed(
    tmp_path: Path, workers: list[str]
) -> None:
    out = _run(tmp_path, remove=False, workers=workers)
    assert out.returncode == 1, out.stdout
    assert "test_sample.py left tmux socket files behind (removed now): agyh-sample-" in out.stdout
    assert not list((tmp_path / f"tmux-{os.getuid()}").glob("agyh-*"))


@MODES
def test_a_module_that_removes_its_socket_passes(tmp_path: Path, workers: list[str]) -> None:
    out = _run(tmp_path, remove=True, workers=workers)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout


def test_only_this_processs_sockets_are_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    tmux_dir().mkdir()
    mine = tmux_dir() / f"agyh-chat-{os.getpid()}-0a1b2c3d"
    for name in (mine.name, f"agyh-chat-{os.getpid() + 1}-0a1b2c3d", "default", f"other-{os.getpid()}-x"):
        (tmux_dir() / name).touch()
    assert left_behind() == [mine]
