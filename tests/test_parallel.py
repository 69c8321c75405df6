"""tests/parallel.py: under ``--dist loadgroup`` the tests that share a module's or the session's fixture
run on one worker, so it is started once; ``-n auto`` is two workers per CPU unless told otherwise."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.parallel import MAX_WORKERS, WORKERS_PER_CPU, auto_workers, cpus
from tests.sub_pytest import pytest_command

ROOT = Path(__file__).resolve().parents[1]
XDIST = ("-n", "3", "--dist", "loadgroup")

CONFTEST = """
import os
from pathlib import Path
import pytest

def _started(name):
    with open(Path(__file__).parent / "started.txt", "a") as f:
        f.write(f"{name} {os.getpid()}\\n")

@pytest.fixture(scope="session")
def server():
    _started("server")
    return "up"
"""

MODULE = """
import pytest

@pytest.fixture(scope="module")
def built():
    from conftest import _started
    _started("built-{name}")
    return 1

{tests}
"""


def _suite(where: Path) -> None:
    (where / "conftest.py").write_text(CONFTEST)
    uses_built = "\n".join(f"def test_built_{i}(built):\n    assert built == 1\n" for i in range(6))
    (where / "test_a.py").write_text(MODULE.format(name="a", tests=uses_built))
    on_server = "\n".join(f"def test_server_{i}(server):\n    assert server == 'up'\n" for i in range(3))
    free = "\n".join(f"def test_free_{i}():\n    pass\n" for i in range(9))
    (where / "test_b.py").write_text(MODULE.format(name="b", tests=on_server + "\n" + free))
    (where / "test_c.py").write_text(MODULE.format(name="c", tests=on_server.replace("_server_", "_c_")))


def test_a_shared_fixture_is_started_once_on_one_worker(tmp_path: Path) -> None:
    _suite(tmp_path)
    out = subprocess.run(
        pytest_command("-q", "-p", "no:cacheprovider", "-p", "tests.parallel", *XDIST, str(tmp_path)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "21 passed" in out.stdout, out.stdout
    started = sorted((tmp_path / "started.txt").read_text().split("\n")[:-1])
    names = [line.split()[0] for line in started]
    assert names == ["built-a", "server"], started  # each once, whichever worker it was


PER_WORKER_SUITE = """
import os
from pathlib import Path
import pytest

@pytest.fixture(scope="session")
def chromium_per_worker():
    with open(Path(__file__).parent / "started.txt", "a") as f:
        f.write(f"{os.getpid()}\\n")
    return "up"

""" + "\n".join(
    f"def test_page_{i}(chromium_per_worker):\n    assert chromium_per_worker == 'up'\n" for i in range(6)
)


def test_the_workers_own_chromium_does_not_pull_its_tests_onto_one_worker(tmp_path: Path) -> None:
    """tests/chromium.py's session fixture is one per worker by design (PER_WORKER): its tests spread
    over the workers, each starting its own (before, they were one group: all on one worker)."""
    (tmp_path / "test_pages.py").write_text(PER_WORKER_SUITE)
    out = subprocess.run(
        pytest_command("-q", "-p", "no:cacheprovider", "-p", "tests.parallel", *XDIST, str(tmp_path)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "6 passed" in out.stdout, out.stdout
    workers = set((tmp_path / "started.txt").read_text().split())
    assert len(workers) > 1, workers


def test_auto_is_two_workers_a_cpu_unless_told() -> None:
    assert auto_workers({}) == max(1, min(MAX_WORKERS, WORKERS_PER_CPU * cpus()))
    assert auto_workers({"PYTEST_XDIST_AUTO_NUM_WORKERS": "3"}) == 3
    assert auto_workers({"PYTEST_XDIST_AUTO_NUM_WORKERS": "many"}) == auto_workers({})
    assert cpus() == len(os.sched_getaffinity(0))
