"""omnigent's environment with this checkout's agy-harness installed into it, for the plugin tests.

* the base: the Python 3.12 venv with the real omnigent 0.19.1 that ``tests/real_omnigent.py``
  builds and caches (a skip locally, a FAILURE with ``CI=true``, when it cannot); never modified;
* a shared, cached overlay venv (``~/.cache/agy-harness/agy-plugin-deps-py3.12-<key>``) that sees
  the base's packages (a ``.pth``) and adds agy-harness's runtime dependencies omnigent lacks;
* a venv that sees both and into which the wheel built from this checkout is installed with its
  ``omnigent`` extra, cached by what it is made of (``shared_plugin_environment``: built once under a
  lock for all xdist workers and the runs after, built anew when the checkout's wheel inputs change),
  as docs/omnigent.md's ``pip install './[omnigent]'`` does (pip, ``--no-index``: the extra and every dependency must already be satisfied by omnigent 0.19.1's
  environment and the overlay, or the install fails); omnigent's own registry then finds the plugin
  through the wheel's entry point.

"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
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


def wheel_inputs(root: Path = ROOT) -> list[Path]:
    """The files this checkout's wheel is built from: ``pyproject.toml``, the readme it names, and every
    file under the directories its ``[tool.setuptools] package-dir`` maps (as the source copy holds
    them: :data:`SOURCE_IGNORE`). Read from ``pyproject.toml`` itself: a package it maps anew is an
    input at once."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    readme = config["project"].get("readme")
    files = [root / "pyproject.toml", *([root / readme] if isinstance(readme, str) else [])]
    for top in sorted(set(config["tool"]["setuptools"]["package-dir"].values())):
        for folder, dirs, names in os.walk(root / top):
            ignored = SOURCE_IGNORE(folder, [*dirs, *names])
            dirs[:] = sorted(d for d in dirs if d not in ignored)
            files.extend(Path(folder) / n for n in sorted(names) if n not in ignored)
    return sorted(set(files))


def environment_key(base_python: Path, root: Path = ROOT) -> str:
    """What the plugin's environment is made of: omnigent's venv, the overlay's dependencies, and the
    path and content of every :func:`wheel_inputs` file."""
    digest = hashlib.sha256(f"{base_python.resolve()}\n{_overlay_key(base_python)}\n".encode())
    for path in wheel_inputs(root):
        digest.update(f"{path.relative_to(root)}\0{path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


#: a cached plugin environment not used for this long is removed by the next run that builds one
UNUSED_FOR = 3 * 24 * 3600.0


def shared_plugin_environment(root: Path = ROOT) -> Path:
    """:func:`plugin_environment`, cached in ``~/.cache/agy-harness/agy-plugin-env-py3.12-<key>`` by
    :func:`environment_key` (built by the first process that asks, under a file lock, a stamp once
    complete): the xdist workers of a run, and the runs after it, reuse it while the checkout's wheel
    inputs, the overlay and omnigent's venv are the same; any change to them is another key, and so a
    fresh build (building one cost ~8 CPU-seconds a run, measured: the wheel, a venv, pip)."""
    base = omnigent_base_python()
    key = environment_key(base, root)
    where = CACHE / f"agy-plugin-env-py3.12-{key}"
    stamp = where / ".complete"
    with _locked(CACHE / f".agy-plugin-env-{key}.lock"):
        if not stamp.exists():
            shutil.rmtree(where, ignore_errors=True)  # (a build that failed half-way)
            where.mkdir(parents=True)
            plugin_environment(where)
            stamp.write_text("ok\n")
            _prune(keep=where)
        stamp.touch()  # in use: kept by the pruning
    return where / "venv" / "bin" / "python"


def _prune(keep: Path) -> None:
    """Remove the cached plugin environments no run used for :data:`UNUSED_FOR` (each under its lock)."""
    now = time.time()
    for other in CACHE.glob("agy-plugin-env-py3.12-*"):
        key = other.name.rsplit("-", 1)[-1]
        if other == keep:
            continue
        with _locked(CACHE / f".agy-plugin-env-{key}.lock"):
            try:
                unused = now - (other / ".complete").stat().st_mtime > UNUSED_FOR
            except OSError:
                unused = True  # never completed (or already gone)
            if unused:
                shutil.rmtree(other, ignore_errors=True)  # (its lock file stays: another may hold it)


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
