"""The wheel installs the layers under ``agy_harness`` only, with every sub-package and data file."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"core", "ports", "adapters", "composition"}


def test_every_sub_package_is_listed() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for layer in LAYERS:
        for init in (ROOT / layer).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT)
            found.add(".".join(("agy_harness", *rel.parts)))
    assert found == listed


@pytest.mark.skipif(os.environ.get("AGY_SKIP_WHEEL") == "1", reason="AGY_SKIP_WHEEL=1")
def test_built_wheel_has_agy_harness_and_no_top_level_layers(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    [wheel] = tmp_path.glob("agy_harness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"agy_harness"}
    assert "agy_harness/core/reconciler.py" in names
    assert "agy_harness/adapters/simulator/shapes/user_input.json" in names
    assert not any(n.startswith(("core/", "ports/")) for n in names)
