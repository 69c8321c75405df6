"""tests/ci_skips.py: with CI=true a skipped test fails the run (unless its reason is allowed anywhere),
in one process and in parallel (``-n 2``: the suite's own way, pyproject.toml's ``addopts``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.sub_pytest import pytest_command

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
import pytest

def test_runs():
    assert True

def test_needs_something():
    pytest.skip({reason!r})
"""

#: a whole module skipped while it is collected (as tests/tmux/conftest.py does without tmux)
MODULE_SKIP = """
import pytest

pytest.skip("the chromium binary is missing", allow_module_level=True)

def test_never_runs():
    pass
"""

#: one process (``-n 0``: the project's addopts would start ``-n auto`` workers), and two workers
#: (each worker collects the skipped module: reported once)
MODES = pytest.mark.parametrize("workers", [["-n", "0"], ["-n", "2"]], ids=["serial", "xdist"])


def _run(
    tmp_path: Path, reason: str, ci: str, workers: list[str], *, module_skip: bool = False
) -> subprocess.CompletedProcess[str]:
    sample = tmp_path / "test_sample.py"
    sample.write_text(SAMPLE.format(reason=reason))
    if module_skip:
        (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci else {})
    plugins = ["-p", "no:cacheprovider", "-p", "tests.ci_skips", *workers]
    return subprocess.run(
        pytest_command("-q", *plugins, str(tmp_path)),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@MODES
def test_in_ci_a_skip_fails_the_run(tmp_path: Path, workers: list[str]) -> None:
    out = _run(tmp_path, "the tmux binary is not on PATH", ci="true", workers=workers)
    assert out.returncode == 1, out.stdout
    assert "1 skipped test(s) fail the run" in out.stdout and "the tmux binary is not on PATH" in out.stdout


@MODES
def test_in_ci_a_module_skipped_at_collection_fails_the_run(tmp_path: Path, workers: list[str]) -> None:
    out = _run(tmp_path, "process discovery is tested on Linux", ci="true", workers=workers, module_skip=True)
    assert out.returncode == 1, out.stdout
    assert "1 skipped test(s) fail the run" in out.stdout and "the chromium binary is missing" in out.stdout


@MODES
def test_locally_a_skip_is_a_skip(tmp_path: Path, workers: list[str]) -> None:
    out = _run(tmp_path, "the tmux binary is not on PATH", ci="", workers=workers)
    assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout


@MODES
def test_a_skip_right_on_any_machine_passes_in_ci(tmp_path: Path, workers: list[str]) -> None:
    out = _run(tmp_path, "process discovery is tested on Linux", ci="true", workers=workers)
    assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout


@MODES
def test_no_test_run_is_not_a_pass(tmp_path: Path, workers: list[str]) -> None:
    """pytest's exit 5 ("no tests ran") reaches .ci/run, whose `set -e` fails on it."""
    (tmp_path / "test_empty.py").write_text("# nothing here\n")
    env = os.environ | {"CI": "true"}
    plugins = ["-p", "no:cacheprovider", "-p", "tests.ci_skips", *workers]
    out = subprocess.run(
        pytest_command("-q", *plugins, str(tmp_path)),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 5, out.stdout
