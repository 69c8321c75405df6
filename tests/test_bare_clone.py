"""The suite runs from the repository alone: a clone with no ``../shared`` next to it.

The repository is copied into an empty directory (so nothing outside it can be found), then pytest
collects the whole suite there and runs the tests that read the recorded fixtures.

The copy is made afresh each run (the directory emptied first) at one place per source tree,
``$AGY_HARNESS_CACHE/bare-clone/<tree>/agy-harness``, not in the test's temporary directory: Python and
pytest cache each module's bytecode (pytest: the assertion-rewritten test modules) under the absolute
path of its source (tests/conftest.py: ``$AGY_HARNESS_CACHE/pycache``). In a new directory each run,
all ~270 test modules were compiled again (5 of the test's ~14 CPU-seconds) and ~8 MB of bytecode was
left in the cache for a path never used again. The copy keeps each file's modification time and
size, so a cached module is used only for the same source (Python's and pytest's own check).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.real_omnigent import cache_root
from tests.select_only import VARIABLE

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".git", "__pycache__", "*.egg-info", "build", "dist", ".benchmarks", ".venv", ".pytest_cache"
)
USES_FIXTURES = [
    "tests/core/test_mapper_fixtures.py",
    "tests/rpc/test_actions_unit.py",
    "tests/composition/test_replay_cli.py::test_replay_prints_stable_json_lines_for_the_fixtures",
    "tests/simulator/test_shapes.py::test_every_fixture_is_covered",
    "tests/simulator/test_shapes.py::test_shapes_are_the_recorded_steps",
]


@contextlib.contextmanager
def fresh_clone() -> Iterator[Path]:
    """This tree copied into ``<cache>/bare-clone/<tree>/agy-harness`` (emptied first), held against
    another run of the same tree's suite (a file lock beside it, not in it)."""
    home = cache_root() / "bare-clone"
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    tree = hashlib.sha256(str(ROOT).encode()).hexdigest()[:16]
    with open(home / f"{tree}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        parent = home / tree
        shutil.rmtree(parent, ignore_errors=True)
        parent.mkdir(mode=0o700)
        clone = parent / "agy-harness"
        shutil.copytree(ROOT, clone, ignore=IGNORE)  # (copy2: each file's modification time kept)
        try:
            yield clone
        finally:
            shutil.rmtree(parent, ignore_errors=True)


def _pytest(clone: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | env
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_suite_runs_from_a_bare_clone() -> None:
    with fresh_clone() as clone:
        assert sorted(p.name for p in clone.parent.iterdir()) == ["agy-harness"]  # (no ../shared)

        # one process: the whole suite collected (a collection error fails the run before any test),
        # the tests that read the recorded fixtures run (tests/select_only.py)
        ran = _pytest(clone, "-n", "0", "-p", "tests.select_only", env={VARIABLE: "\n".join(USES_FIXTURES)})
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
        assert " passed" in ran.stdout and " skipped" not in ran.stdout
        assert " deselected" in ran.stdout  # (the others were collected)
