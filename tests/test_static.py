"""The quality gates, run as part of the one test command: ruff everywhere, mypy --strict on every
layer (core, ports, adapters, composition; tests stay unchecked), and the layering rule (core imports
only ports, pydantic and the standard library)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("core", "ports", "adapters", "composition")


def tool(name: str) -> str | None:
    """``name``'s executable: the one next to this Python (the venv's ``bin``, found though the venv is
    not activated) before the one on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def test_ruff_clean() -> None:
    ruff = tool("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    out = subprocess.run(
        [ruff, "check", *LAYERS, "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def mypy_cache(name: str, fallback: Path) -> Path:
    """A mypy cache kept across runs, outside the tree (``$AGY_HARNESS_CACHE/mypy/<name>``, the cache the
    bytecode and the omnigent venvs use): a run re-checks only the modules whose source changed (mypy
    compares each file's hash, so a fresh clone of the same tree is not checked again), not every layer,
    the standard library and the third-party packages again (16 CPU-seconds cold, under 1 warm). One
    cache per tree checked (``name``): the copied tree with a new event type does not undo the real
    tree's entries. Modules with errors are never cached by mypy, so each run still reports every
    error. Without a writable cache directory: ``fallback`` (this run's own)."""
    root = Path(os.environ.get("AGY_HARNESS_CACHE") or Path.home() / ".cache" / "agy-harness")
    where = root / "mypy" / name
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return fallback
    return where


def test_mypy_strict_on_every_layer(tmp_path: Path) -> None:
    # mypy cannot follow setuptools' editable-install import hook; give it the installed layout.
    pkg = tmp_path / "agy_harness"
    pkg.mkdir()
    for layer in LAYERS:
        os.symlink(ROOT / layer, pkg / layer)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(mypy_cache("tree", tmp_path / "mypy-cache")),
            *(arg for layer in LAYERS for arg in ("-p", f"agy_harness.{layer}")),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


ALLOWED_IN_CORE = {"agy_harness.ports", "pydantic", "__future__"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_core_imports_only_ports_pydantic_and_the_standard_library() -> None:
    bad = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or any(
                name == a or name.startswith(a + ".") for a in ALLOWED_IN_CORE
            ):
                continue
            if name.startswith("agy_harness.core"):
                continue
            bad.append(f"{path.relative_to(ROOT)}: {name}")
    assert not bad, bad
    # no I/O, clocks or subprocesses in core either
    banned = {"socket", "subprocess", "time", "asyncio", "threading", "os", "pathlib", "shutil", "io"}
    used = {
        f"{p.name}: {n}"
        for p in (ROOT / "core").rglob("*.py")
        for n in _imports(p)
        if n.split(".")[0] in banned
    }
    assert not used, used


def test_ports_import_nothing_but_pydantic_and_the_standard_library() -> None:
    for path in sorted((ROOT / "ports").rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            assert (
                top in sys.stdlib_module_names or top == "pydantic" or name.startswith("agy_harness.ports")
            ), f"{path.name}: {name}"


#: every consumer that dispatches on the event type with ``match`` + ``assert_never``
CONSUMERS = (
    "core/turns.py",
    "adapters/sinks/terminal.py",
    "adapters/sinks/omnigent/wire.py",
    "composition/entrypoints/acp/mapping.py",
    "composition/entrypoints/omnigent_plugin/translate.py",
    "composition/entrypoints/board/cards.py",
    "composition/entrypoints/board/fleet.py",
    "composition/entrypoints/board/hub.py",
    "composition/entrypoints/board/live.py",
)


def test_a_new_event_type_fails_type_checking_in_every_consumer(tmp_path: Path) -> None:
    """Add an event type to the union in a copy of the tree: mypy must name each consumer."""
    pkg = tmp_path / "agy_harness"
    pkg.mkdir()
    for layer in LAYERS:
        shutil.copytree(ROOT / layer, pkg / layer, ignore=shutil.ignore_patterns("__pycache__", "static"))
    events = pkg / "ports" / "events.py"
    text = events.read_text(encoding="utf-8")
    text = text.replace(
        "\n\nEvent = Annotated[\n",
        '\n\nclass Novel(_Event):\n    type: Literal["novel"] = "novel"\n\n\nEvent = Annotated[\n    Novel\n    | ',
    ).replace("    Novel\n    |     UserMessage", "    Novel\n    | UserMessage")
    assert "class Novel" in text
    events.write_text(text, encoding="utf-8")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(mypy_cache("new-event-type", tmp_path / "mypy-cache")),
            *(arg for layer in LAYERS for arg in ("-p", f"agy_harness.{layer}")),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    unhandled = {
        line.split(":")[0].removeprefix("agy_harness/")
        for line in out.stdout.splitlines()
        if '"assert_never"' in line
    }
    assert set(CONSUMERS) <= unhandled, out.stdout
