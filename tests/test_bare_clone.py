"""The suite runs from the repository alone: a clone with no ``../shared`` next to it.

The repository is copied into an empty directory (so nothing outside it can be found), then pytest
collects the whole suite there and runs the tests that read the recorded fixtures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "dist", ".benchmarks", ".venv", ".pytest_cache")
USES_FIXTURES = [
    "tests/core/test_mapper_fixtures.py",
    "tests/rpc/test_actions_unit.py",
    "tests/composition/test_replay_cli.py::test_replay_prints_stable_json_lines_for_the_fixtures",
    "tests/simulator/test_shapes.py::test_every_fixture_is_covered",
    "tests/simulator/test_shapes.py::test_shapes_are_the_recorded_steps",
]


def _pytest(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_suite_runs_from_a_bare_clone(tmp_path: Path) -> None:
    clone = tmp_path / "agy-harness"
    shutil.copytree(ROOT, clone, ignore=IGNORE)
    assert not (tmp_path / "shared").exists()

    collected = _pytest(clone, "--collect-only", "-n", "0")  # (one process: the same collection, once)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]

    ran = _pytest(clone, "-n", "0", *USES_FIXTURES)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert " passed" in ran.stdout and " skipped" not in ran.stdout
