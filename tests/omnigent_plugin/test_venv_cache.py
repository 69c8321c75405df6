"""The plugin's environment is cached by what it is made of (``venv.shared_plugin_environment``): reused
while the checkout's wheel inputs are the same, built anew when any of them changes -- never a stale
plugin under test. Files in a checkout of their own; the build itself stubbed (the real one runs for
every plugin test: conftest.plugin_python)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from . import venv

PYPROJECT = """
[project]
name = "x"
readme = "README.md"

[tool.setuptools]
package-dir = { "x.core" = "core", "x.plugin" = "plugin" }
"""


def checkout(root: Path) -> Path:
    for rel, text in {
        "pyproject.toml": PYPROJECT,
        "README.md": "read me\n",
        "core/a.py": "A = 1\n",
        "plugin/app.py": "APP = 1\n",
        "tests/test_a.py": "def test(): pass\n",
        "docs/page.md": "a page\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


BASE = Path(sys.executable)


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("plugin/app.py", "APP = 2\n"),
        ("core/a.py", "A = 2\n"),
        ("plugin/new.py", "NEW = 1\n"),
        ("README.md", "read me again\n"),
        ("pyproject.toml", PYPROJECT + "\n[tool.other]\n"),
    ],
)
def test_a_change_to_a_wheel_input_is_another_key(tmp_path: Path, rel: str, text: str) -> None:
    root = checkout(tmp_path)
    before = venv.environment_key(BASE, root)
    (root / rel).write_text(text)
    assert venv.environment_key(BASE, root) != before


@pytest.mark.parametrize("rel", ["tests/test_a.py", "docs/page.md", "plugin/__pycache__/app.cpython-312.pyc"])
def test_what_the_wheel_is_not_built_from_keeps_the_key(tmp_path: Path, rel: str) -> None:
    root = checkout(tmp_path)
    before = venv.environment_key(BASE, root)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("changed\n")
    assert venv.environment_key(BASE, root) == before


def test_the_environment_is_reused_until_the_plugin_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = checkout(tmp_path / "checkout")
    cache = tmp_path / "cache"
    built: list[Path] = []

    def build(where: Path) -> Path:
        python = where / "venv" / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text((root / "plugin" / "app.py").read_text())  # what this build installed
        built.append(where)
        return python

    monkeypatch.setattr(venv, "CACHE", cache)
    monkeypatch.setattr(venv, "omnigent_base_python", lambda: BASE)
    monkeypatch.setattr(venv, "plugin_environment", build)
    first = venv.shared_plugin_environment(root)
    assert venv.shared_plugin_environment(root) == first and len(built) == 1  # reused
    (root / "plugin" / "app.py").write_text("APP = 2\n")
    second = venv.shared_plugin_environment(root)
    assert second != first and len(built) == 2  # the changed plugin: built anew
    assert second.read_text() == "APP = 2\n" and first.read_text() == "APP = 1\n"
    # a half-built one (no stamp) is built again, not used
    (second.parents[2] / ".complete").unlink()
    assert venv.shared_plugin_environment(root) == second and len(built) == 3
    # one no run used for UNUSED_FOR goes when another is built; one in use stays
    old = first.parents[2] / ".complete"
    os.utime(old, (0, 0))
    (root / "plugin" / "app.py").write_text("APP = 3\n")
    third = venv.shared_plugin_environment(root)
    assert not first.exists() and second.exists() and third.read_text() == "APP = 3\n"
