"""omnigent's environment with this checkout's agy-harness installed into it, for the plugin tests.

* the base: the Python 3.12 venv with the real omnigent 0.19.1 that ``tests/real_omnigent.py``
  builds and caches (a skip locally, a FAILURE with ``CI=true``, when it cannot); never modified;
* a shared, cached overlay venv (``~/.cache/agy-harness/agy-plugin-deps-py3.12-<key>``) that sees
  the base's packages (a ``.pth``) and adds agy-harness's runtime dependencies omnigent lacks;
* per test run, a fresh venv that sees both and into which the wheel built from this checkout is
  installed with its ``omnigent`` extra (built once for all of the run's xdist workers, under a lock:
  ``shared_plugin_environment``), as docs/omnigent.md's ``pip install './[omnigent]'`` does (pip,
  ``--no-index``: the extra and every dependency must already be satisfied by omnigent 0.19.1's
  environment and the overlay, or the install fails); omnigent's own registry then finds the plugin
  through the wheel's entry point.

"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import real_omnigent
from tests.real_omnigent import cache_root, require_omnigent_venv

ROOT = Path(__file__).resolve().parents[2]
CACHE = cache_root()


def omnigent_base_python() -> Path:
    """The Python of the venv holding the real omnigent 0.19.1 (built and cached by tests/real_omnigent.py)."""
    return require_omnigent_venv() / "bin" / "python"


def _site(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _runtime_deps() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def _make_venv(where: Path, sees: list[Path], base_python: Path) -> Path:
    subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    (_site(python) / "_agy_plugin_sees.pth").write_text("".join(f"{p}\n" for p in sees))
    return python


def _overlay_key(base_python: Path) -> str:
    return hashlib.sha256(f"{base_python.resolve()}\n{_runtime_deps()}".encode()).hexdigest()[:12]


def deps_overlay(base_python: Path) -> Path:
    """The cached overlay: base packages + agy-harness's runtime dependencies. Its Python."""
    deps = _runtime_deps()
    key = _overlay_key(base_python)
    where = CACHE / f"agy-plugin-deps-py3.12-{key}"
    stamp = where / ".complete"
    with _locked(CACHE / f".agy-plugin-deps-{key}.lock"):
        if not stamp.exists():
            shutil.rmtree(where, ignore_errors=True)
            real_omnigent.report(f"installing agy-harness's dependencies beside omnigent at {where} (once)")
            python = _make_venv(where, [_site(base_python)], base_python)
            out = subprocess.run(
                [str(base_python), "-m", "pip", "--python", str(python), "install", "-q", *deps],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                pytest.skip(f"cannot install agy-harness's dependencies for omnigent: {out.stderr[-2000:]}")
            stamp.write_text("ok\n")
    return where / "bin" / "python"


#: what a copy of the checkout to build from leaves out (build output, caches, the venv)
SOURCE_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", ".benchmarks"
)


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout, built from a private copy of its source: setuptools builds in the
    tree it is given (``build/``, ``*.egg-info``), and two builds in one tree at once (the parallel
    workers: tests/test_packaging.py and the plugin's environment) tripped over each other's files;
    a stale ``build/`` could also put a deleted module into the wheel."""
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=SOURCE_IGNORE)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    shutil.rmtree(source)
    [wheel] = out.glob("agy_harness-*.whl")
    return wheel


def plugin_environment(tmp: Path) -> Path:
    """A fresh venv: omnigent + agy-harness's deps + this checkout's wheel and its ``omnigent`` extra. Its
    Python."""
    base = omnigent_base_python()
    overlay = deps_overlay(base)
    wheel = build_wheel(tmp / "wheel")
    python = _make_venv(tmp / "venv", [_site(overlay), _site(base)], base)
    res = subprocess.run(
        [
            str(base),
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-index",
            f"{wheel}[omnigent]",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    return python


def shared_plugin_environment(run: Path) -> Path:
    """:func:`plugin_environment` in ``run/agy-plugin``, built by the first process that asks (a file
    lock; a stamp once complete) and reused by the others: the xdist workers of one run share it."""
    where = run / "agy-plugin"
    stamp = where / ".complete"
    with _locked(run / "agy-plugin.lock"):
        if not stamp.exists():
            shutil.rmtree(where, ignore_errors=True)  # (a build that failed half-way)
            where.mkdir(parents=True)
            plugin_environment(where)
            stamp.write_text("ok\n")
    return where / "venv" / "bin" / "python"


def build_ahead(*, plugin: bool) -> None:
    """The real omnigent's venv and (``plugin``) the overlay, built now if missing (tests/conftest.py:
    at collection, outside any test's timeout). Only what is missing is looked at (a check that the venv
    imports costs seconds a process). A failure is left for the fixtures to report."""
    python = real_omnigent.cache_root() / real_omnigent.VENV_NAME / "bin" / "python"
    try:
        if not python.exists():
            real_omnigent.omnigent_venv()
        if plugin and not (CACHE / f"agy-plugin-deps-py3.12-{_overlay_key(python)}" / ".complete").exists():
            deps_overlay(omnigent_base_python())
    except (real_omnigent.OmnigentUnavailable, pytest.skip.Exception):
        return
