"""``pytest --lf`` re-runs only the tests that failed last time: pytest's cache is on (it used to be
disabled with ``-p no:cacheprovider``, and ``--lf`` silently ran the whole suite), and it lives outside
the source tree (``cache_dir`` in pyproject.toml)."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

from tests.sub_pytest import pytest_command

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
def test_passes():
    pass

def test_fails():
    assert False
"""


def _pytest(where: Path, *args: str) -> str:
    # the project's `-n auto` on two workers whatever the machine (tests/parallel.py: two a CPU, up to 16):
    # the sample has two tests
    env = os.environ | {"PYTEST_XDIST_AUTO_NUM_WORKERS": "2"}
    out = subprocess.run(
        pytest_command(
            "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(where), *args, project_settings=True
        ),
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
    )
    return out.stdout + out.stderr


def test_lf_reruns_only_the_last_failures(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    cache = f"cache_dir={tmp_path / 'cache'}"  # the project's settings, a cache of this test's own
    assert "1 failed, 1 passed" in _pytest(tmp_path, "-o", cache, "test_sample.py")
    again = _pytest(tmp_path, "-o", cache, "--lf", "test_sample.py")
    # only the last failure ran (the project's addopts run it on xdist workers: the controller's summary
    # line has no "1 deselected" and no "rerun previous" header, the workers got "[1 item]")
    assert re.search(r"=+ 1 failed in ", again) and "[1 item]" in again, again


def test_the_cache_is_outside_the_tree() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "cacheprovider" not in options.get("addopts", "")
    cache = Path(options["cache_dir"]).expanduser()
    assert cache.is_absolute() and not cache.is_relative_to(ROOT)
